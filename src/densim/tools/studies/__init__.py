"""Built-in studies: each module defines ``STUDY``; discovered by :func:`densim.tools.studies.base.all_studies`."""
