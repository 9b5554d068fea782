"""Study ``val-nvme-p3700``: Intel DC P3700 QD1 latency and QD16 IOPS from its datasheet.

Source, set-up, measured figures, tolerance and the expected weak spot: see
:mod:`densim.tools.studies.val_nvme_qd` (AnandTech 2017, P4800X review p. 4: P3700 800 GB, 77.9 us mean
latency at QD1, 167.2 k IOPS at QD16; tolerance +/-20 %). Inputs: the P3700 product specification's
20 us latency and 460 k random-read IOPS (modelling guide §7.2 [S32]).
"""

from __future__ import annotations

from densim.tools.studies.base import Study
from densim.tools.studies.val_nvme_qd import SOURCE, run_p3700

STUDY = Study(
    name="val-nvme-p3700",
    description="Validation: DC P3700 QD1 latency and QD16 IOPS from its datasheet (AnandTech 2017 measurements)",
    run=run_p3700,
    source=SOURCE,
    tags=("validation", "storage"),
    area="storage",
)
