"""Forecast and capacity (issue 9): a SimPy model of nova's boot workflow calibrated from the
spans and phases of real runs, written as the canonical tables of a run folder.

Modules: :mod:`~stacklens.forecast.dist` (load-binned empirical distributions),
:mod:`~stacklens.forecast.calibrate` (fit them to traced runs), :mod:`~stacklens.forecast.knobs`
(the settings that decide scale), :mod:`~stacklens.forecast.model` (the simulation),
:mod:`~stacklens.forecast.tables` (a simulated storm as canonical tables),
:mod:`~stacklens.forecast.run` (one forecast as a library call),
:mod:`~stacklens.forecast.validate` (predicted vs measured),
:mod:`~stacklens.forecast.capacity` (step the load until the SLA breaks).
The shipped calibration model is ``data/lab-2025.1.json``. Imports downward only: store,
schema, manifest, errors.
"""
