//! OpenTelemetry export of `fleetdash run` (being written: issue 34).
