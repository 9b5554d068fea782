"""Engine stages contributed by resource models; every module here is imported by the engine."""
