"""Where a sweep's runs execute: here one at a time (local), as a Slurm array, or as Ray tasks; one job module."""
