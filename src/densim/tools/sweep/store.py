"""The results store: ``<root>/<study>/scenario=<id>/seed=<n>/*`` plus a manifest.

Crash safety: every file is written to a temporary name and renamed, and a task's files are
first written into a hidden temporary folder that is renamed to ``seed=<n>`` only when all
files are in place. So a ``seed=<n>`` folder is always complete, and a task counts as done
exactly when its folder exists; a killed sweep leaves at most a hidden ``.tmp`` folder, which
the next run deletes.

Determinism: every file except ``runs.json`` depends only on the study inputs, so two stores
of the same study are byte-identical however the sweep was scheduled, interrupted or resumed.
``runs.json`` is the run log (start/end times, backend, counts) and is the one file that is
expected to differ.

Checked on read: a task's ``task.json`` lists its files with their sizes and SHA-256 digests.
A file deleted or truncated inside a finished task (a full disk, a careless ``rm``) is found by
:meth:`Store.check_task`: ``densim query``/``report`` refuse the store naming the file (they would
otherwise return fewer rows without a word), and a resumed sweep runs the task again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from densim.atomic import write_atomic, write_json_atomic, write_text_atomic
from densim.errors import InputError
from densim.tools.sweep.expand import Sweep, Task

RUN_LOG = "runs.json"
TASK_FILE = "task.json"
MANIFEST = "manifest.json"
SCENARIOS = "scenarios.parquet"
# written when a store is created: only a folder carrying it is resumed or deleted by --fresh
MARKER = "densim-store.json"
MARKER_FORMAT = "densim results store"


class Store:
    def __init__(self, root: str | Path, study: Sweep | None = None) -> None:
        self.root = Path(root)
        self.study = study

    # -- layout ---------------------------------------------------------------------------
    def task_dir(self, task: Task) -> Path:
        return self.root / f"scenario={task.scenario_id}" / f"seed={task.seed}"

    def is_done(self, task: Task) -> bool:
        return self.task_dir(task).is_dir()

    def check_task(self, task: Task, *, deep: bool = False) -> str | None:
        """What is wrong with a finished task's folder (None when every file is as written)."""
        return check_task_dir(self.task_dir(task), deep=deep)

    def discard(self, task: Task) -> None:
        """Remove a damaged task folder so that the task runs again (renamed first: atomic)."""
        d = self.task_dir(task)
        trash = d.parent / f".seed={task.seed}.tmp-damaged-{uuid.uuid4().hex[:8]}"
        os.rename(d, trash)
        shutil.rmtree(trash, ignore_errors=True)

    # -- lifecycle ------------------------------------------------------------------------
    def prepare(self, *, fresh: bool = False) -> None:
        """Create the store (or check that an existing one was made from the same inputs).

        An existing folder is resumed, or deleted with ``fresh``, only when it carries the store's
        marker (:data:`MARKER`); an empty folder is used as is; any other folder is refused.
        A finished task whose recorded inputs differ from the study's is refused (never skipped as done).
        """
        study = self._need_study()
        if self.root.exists() or self.root.is_symlink():
            if not self.root.is_dir():
                raise InputError(self.root, "", "is not a folder (the results store is a folder; choose another --out)")
            if not self._is_store():
                if fresh:
                    raise InputError(self.root, "", f"is not a densim results store (no {MARKER} marker): --fresh deletes "
                                                    "only a results store; choose another --out or remove the folder yourself")
                raise InputError(self.root, "", f"exists and is not a densim results store (no {MARKER} marker): the sweep "
                                                "does not write into it; choose another --out or remove the folder yourself")
            if fresh and self.root.is_symlink():
                raise InputError(self.root, "", "is a link: --fresh deletes only a results store's own folder; remove the "
                                                "link or choose another --out")
            if fresh:
                trash = self.root.with_name(f".{self.root.name}.tmp-fresh-{uuid.uuid4().hex[:8]}")
                os.rename(self.root, trash)  # atomic: a killed --fresh leaves the old store or none, never half
                shutil.rmtree(trash)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(self.root, "", f"cannot create the results store: {exc.strerror}") from None
        if not self.root.is_dir():
            raise InputError(self.root, "", "is not a folder (the results store is a folder; choose another --out)")
        if not (self.root / MARKER).is_file():
            write_json_atomic(self.root / MARKER, {"format": MARKER_FORMAT, "version": 1, "study": study.name})
        self._clean_temporaries()
        self._check_recorded_inputs()
        old = self.root / MANIFEST
        if old.exists():
            try:
                prev = json.loads(old.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                prev = {}
            prev_points = {s["id"]: s.get("scenario_sha256") for s in prev.get("scenarios", [])}
            for p in study.points:
                if p.id in prev_points and prev_points[p.id] != p.sha256:
                    raise InputError(
                        self.root,
                        f"scenario={p.id}",
                        "the store holds results of different inputs for this point; rerun with --fresh or choose another --out",
                    )
            if prev.get("root_seed") not in (None, study.spec.seed):
                raise InputError(self.root, "root_seed", "the store was made with another root seed; use --fresh or another --out")
        for p in study.points:
            target = self.root / f"scenario={p.id}" / "scenario.json"
            text = json.dumps({"id": p.id, "values": p.values, "inputs": p.inputs, "scenario": p.mapping},
                              indent=2, sort_keys=True) + "\n"
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                write_text_atomic(target, text)
        self._write_scenarios_table()
        self.write_manifest()

    def _is_store(self) -> bool:
        """The folder carries the marker, is empty, or is a store written before the marker existed
        (its manifest names this study)."""
        marker = self.root / MARKER
        if marker.is_file() and not marker.is_symlink():
            try:
                data = json.loads(marker.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                return False
            return isinstance(data, dict) and data.get("format") == MARKER_FORMAT
        if not any(self.root.iterdir()):
            return True
        man = self.root / MANIFEST
        if man.is_file() and not man.is_symlink() and man.stat().st_size < 2**26:
            try:
                data = json.loads(man.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                return False
            return isinstance(data, dict) and data.get("study") == self._need_study().name and \
                isinstance(data.get("tasks"), list) and "seed_derivation" in data
        return False

    def _check_recorded_inputs(self) -> None:
        """Refuse a finished task of this study whose ``task.json`` records other inputs than the study's now.

        A task folder whose ``task.json`` cannot be read is left to :meth:`check_task` (it is rerun)."""
        study = self._need_study()
        for t in study.tasks():
            d = self.task_dir(t)
            tf = d / TASK_FILE
            if not tf.is_file() or tf.stat().st_size > 2**24:
                continue
            try:
                meta = json.loads(tf.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                continue
            if not isinstance(meta, dict):
                continue
            want = study.point(t.scenario_id).inputs
            got = meta.get("inputs")
            if got != want:
                raise InputError(d, "", f"holds results of other inputs: {_inputs_differ(got, want)}; rerun with --fresh "
                                        "or choose another --out")

    def _clean_temporaries(self) -> None:
        for d in self.root.glob("scenario=*/.seed=*.tmp-*"):
            shutil.rmtree(d, ignore_errors=True)
        for f in self.root.rglob(".*.tmp"):
            f.unlink(missing_ok=True)

    def commit(self, task: Task, files: dict[str, bytes]) -> Path:
        """Write a finished task's files: temp folder, each file atomically, then one rename."""
        final = self.task_dir(task)
        if final.exists():
            return final
        tmp = final.parent / f".seed={task.seed}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        try:
            listing = {}
            for name, data in sorted(files.items()):
                if name.startswith(("/", ".")) or ".." in Path(name).parts or name == TASK_FILE:
                    raise ValueError(f"runner returned an unsafe file name {name!r}")
                write_atomic(tmp / name, lambda p, d=data: p.write_bytes(d))
                listing[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            meta = {"scenario": task.scenario_id, "replication": task.replication, "seed": task.seed, "files": listing,
                    "inputs": self._need_study().point(task.scenario_id).inputs}
            write_json_atomic(tmp / TASK_FILE, meta)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final

    # -- metadata -------------------------------------------------------------------------
    def _write_scenarios_table(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        study = self._need_study()
        cols: dict[str, Any] = {
            "scenario": pa.array([p.id for p in study.points], pa.string()),
            "point": pa.array([p.index for p in study.points], pa.int64()),
        }
        for axis in study.spec.axes:
            vals = [p.values[axis] for p in study.points]
            cols[axis] = _column(vals)
        buf = pa.BufferOutputStream()
        pq.write_table(pa.table(cols), buf, compression="zstd")
        data = buf.getvalue().to_pybytes()
        target = self.root / SCENARIOS
        if not target.exists() or target.read_bytes() != data:
            write_atomic(target, lambda p: p.write_bytes(data))

    def write_manifest(self) -> dict[str, Any]:
        """Deterministic manifest: inputs, every point, every task and whether it is done."""
        study = self._need_study()
        tasks = []
        for t in study.tasks():
            d = self.task_dir(t)
            entry: dict[str, Any] = {"scenario": t.scenario_id, "replication": t.replication, "seed": t.seed, "done": d.is_dir()}
            if entry["done"]:
                entry["files"] = sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file())
            tasks.append(entry)
        manifest = {
            "study": study.name,
            "description": study.spec.description,
            "study_file": study.path.name,
            "study_sha256": study.study_sha256,
            "runner": study.spec.runner,
            "root_seed": study.spec.seed,
            "replications": study.spec.replications,
            "seeds": study.seeds,
            "seed_derivation": "numpy SeedSequence(root_seed).spawn(replications); replication r uses seeds[r] in every scenario",
            "axes": study.spec.axes,
            "scenarios": [{"id": p.id, "point": p.index, "values": p.values, "scenario_sha256": p.sha256, "inputs": p.inputs}
                          for p in study.points],
            "tasks": tasks,
            "complete": all(t["done"] for t in tasks),
            "layout": "scenario=<id>/seed=<seed>/<file>; run log with times in runs.json (not deterministic)",
        }
        write_json_atomic(self.root / MANIFEST, manifest)
        return manifest

    def log_run(self, record: dict[str, Any]) -> None:
        path = self.root / RUN_LOG
        runs: list[Any] = []
        if path.exists():
            try:
                runs = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                runs = []
        runs.append(record)
        write_json_atomic(path, runs)

    def _need_study(self) -> Sweep:
        if self.study is None:
            raise RuntimeError("this operation needs the study")
        return self.study


def _inputs_differ(got: Any, want: dict[str, Any]) -> str:
    """What differs between a task's recorded inputs and the study's, in words."""
    if not isinstance(got, dict):
        return "the task records no inputs (written by an older densim)"
    if got.get("densim") != want.get("densim"):
        return f"made by densim {got.get('densim')}, this is densim {want.get('densim')}"
    if got.get("runner") != want.get("runner"):
        return f"made by runner {got.get('runner')!r}, the study names {want.get('runner')!r}"
    if got.get("scenario_sha256") != want.get("scenario_sha256"):
        return "the scenario changed (the base scenario, a file it imports, or the axis values)"
    old, new = got.get("data_sha256") or {}, want.get("data_sha256") or {}
    for f in sorted(set(old) | set(new)):
        if old.get(f) != new.get(f):
            return f"the data file {f} changed" if f in old and f in new else f"the scenario reads other data files ({f})"
    return "the recorded inputs differ"


def _column(vals: list[Any]):
    import pyarrow as pa

    if all(isinstance(v, bool) for v in vals):
        return pa.array(vals, pa.bool_())
    if all(isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 for v in vals):
        return pa.array(vals, pa.int64())
    if any(isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63 for v in vals):
        return pa.array([json.dumps(v, sort_keys=True, default=str) for v in vals], pa.string())  # exact, not wrapped
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return pa.array([float(v) for v in vals], pa.float64())
    if all(isinstance(v, str) for v in vals):
        return pa.array(vals, pa.string())
    return pa.array([json.dumps(v, sort_keys=True, default=str) for v in vals], pa.string())


def check_task_dir(d: Path, *, deep: bool = False) -> str | None:
    """None if the task folder ``d`` holds every file its ``task.json`` lists, at its size (and
    digest when ``deep``); otherwise what is wrong, naming the file."""
    if not d.is_dir():
        return "the task folder is missing"
    tf = d / TASK_FILE
    if not tf.exists():
        return f"{TASK_FILE} is missing"
    if not tf.is_file() or tf.stat().st_size > 2**24:
        return f"{TASK_FILE} is damaged"
    try:
        meta = json.loads(tf.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return f"{TASK_FILE} is damaged"
    listing = meta.get("files") if isinstance(meta, dict) else None
    if listing is None:  # a store written before task.json listed its files: nothing to compare
        return None
    if not isinstance(listing, dict):
        return f"{TASK_FILE} is damaged"
    for name, info in sorted(listing.items()):
        p = d / name
        try:
            size = p.stat().st_size if p.is_file() else None
        except OSError:
            size = None
        if size is None:
            return f"{name} is missing"
        want = info.get("bytes") if isinstance(info, dict) else None
        if size != want:
            return f"{name} has {size:,} bytes, {want:,} were written (truncated or changed)" if isinstance(want, int) else \
                f"{TASK_FILE} is damaged"
        if deep and hashlib.sha256(p.read_bytes()).hexdigest() != info.get("sha256"):
            return f"{name} differs from what was written (SHA-256 mismatch)"
    return None


def read_manifest(root: str | Path) -> dict[str, Any]:
    """The store's manifest (a regular file holding a JSON mapping), or an :class:`InputError`."""
    from densim.textio import read_text_file

    p = Path(root) / MANIFEST
    text = read_text_file(p, "results-store manifest")
    try:
        man = json.loads(text)
    except (ValueError, RecursionError):
        raise InputError(p, "", "damaged manifest: not valid JSON (rerun 'densim sweep' to rewrite it)") from None
    if not isinstance(man, dict):
        raise InputError(p, "", "damaged manifest: not a results store")
    return man


def verify_store(root: str | Path, *, deep: bool = False) -> None:
    """Raise :class:`InputError` naming the first damaged task file of a store (before a query reads it).

    Every task the manifest records as done, and every ``seed=`` folder present, must hold the files
    its ``task.json`` lists at their written sizes.
    """
    root = Path(root)
    man = read_manifest(root)
    if not (root / SCENARIOS).is_file():
        raise InputError(root / SCENARIOS, "", "missing: the results store is damaged (rerun 'densim sweep')")
    dirs = {p for p in root.glob("scenario=*/seed=*") if p.is_dir()}
    for t in man.get("tasks", []) if isinstance(man.get("tasks"), list) else []:
        if isinstance(t, dict) and t.get("done"):
            dirs.add(root / f"scenario={t.get('scenario')}" / f"seed={t.get('seed')}")
    for d in sorted(dirs):
        problem = check_task_dir(d, deep=deep)
        if problem is not None:
            raise InputError(d, "", f"finished task damaged: {problem}; rerun 'densim sweep' on the study to recompute it")


def store_files(root: str | Path, *, exclude: tuple[str, ...] = (RUN_LOG, "report.html")) -> dict[str, bytes]:
    """Every file of a store by relative path (for comparing two stores file for file)."""
    root = Path(root)
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in exclude
    }
