"""What-if sweeps: study files with set-valued axes, backends, a resumable Parquet results store."""

from densim.tools.sweep.run import SweepOutcome, default_store_root, run_sweep
from densim.tools.sweep.store import Store, store_files
from densim.spec.sweep import SweepSpec
from densim.tools.sweep.expand import Sweep, Task, load_sweep

__all__ = ["Store", "Sweep", "SweepSpec", "SweepOutcome", "Task", "default_store_root", "load_sweep", "run_sweep", "store_files"]
