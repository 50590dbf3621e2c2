"""Small helpers every layer may use: file writes. Imports nothing else of ppolab."""
