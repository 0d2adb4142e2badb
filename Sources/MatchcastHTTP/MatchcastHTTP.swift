// The device/admin HTTP API arrives with the broker (issue 3).
