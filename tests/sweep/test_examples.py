"""The example studies in examples/sweeps expand and validate (every point), without running them."""

from densim.tools.sweep import load_sweep


def test_overcommit_example_expands(repo):
    st = load_sweep(repo / "examples/sweeps/overcommit.yaml")
    # 3 over-commit ratios x 2 policies x 2 host counts = 12 points, x 3 replications = 36 tasks
    assert len(st.points) == 12 and len(st.tasks()) == 36
    assert len({p.id for p in st.points}) == 12


def test_planetlab_example_expands(repo, traces):
    st = load_sweep(repo / "examples/sweeps/planetlab-hosts.yaml")
    assert len(st.points) == 6
    cores = sorted({p.mapping["cluster"]["hosts"][0]["cpu"]["cores_per_socket"] for p in st.points})
    assert cores == [16, 32, 64]
    # the merged axis value keeps the rest of the CPU block
    assert all(p.mapping["cluster"]["hosts"][0]["cpu"]["base_clock"] == "1000 MHz" for p in st.points)
