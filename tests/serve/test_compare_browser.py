"""The page's B - A in Chromium: a B that leaves VMs unplaced shows a warning, and its lower energy is not bold."""

from __future__ import annotations

import pytest

from .test_browser import B, card, change, page  # noqa: F401  (page: the fixture)

pytestmark = pytest.mark.browser


def test_b_leaving_vms_unplaced_shows_a_warning_not_a_bold_improvement(page):  # noqa: F811
    # micro: memory_overcommit 0.5 -> 4 GiB per 8 GiB host -> 1 VM of 4 GiB per host: 4 of 8 VMs unplaced
    page.check("#compare")
    page.wait_for_selector(f"{B} .headline[data-key]:not([data-key=''])")
    change(page, B, "placement.memory_overcommit", "0.5")
    warning = page.wait_for_selector("#diff .diff-warning")
    assert warning.inner_text().startswith("Warning: B leaves 4 VMs unplaced: infeasible")
    assert card(page, B, "vms_unplaced") == "4"
    energy = page.locator("#diff .diff-headline tr", has_text="energy")
    assert energy.get_attribute("class") == "not-comparable"
    delta = energy.locator("td").last
    assert delta.inner_text().startswith("-")  # B - A is still shown: less energy, for fewer VMs
    assert delta.evaluate("e => getComputedStyle(e).fontWeight") == "400"  # not the bold of a change
    unplaced = page.locator("#diff .diff-headline tr", has_text="VMs unplaced")
    assert unplaced.get_attribute("class") == "moved"
    assert page.errors == []
