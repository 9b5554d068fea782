"""Built-in studies: each module defines ``STUDY``; discovered by :func:`densim.studies.base.all_studies`."""
