"""What-if sweeps: study files with set-valued axes, backends, a resumable Parquet results store."""

from densim.tools.sweep.run import SweepOutcome, default_store_root, run_sweep
from densim.tools.sweep.store import Store, store_files
from densim.tools.sweep.study import Study, StudySpec, Task, load_study

__all__ = ["Store", "Study", "StudySpec", "SweepOutcome", "Task", "default_store_root", "load_study", "run_sweep", "store_files"]
