"""One folder per provider format (`<format>/`: its body reader, stream assembler, request
reader, replay pieces, shape probes and row), the registry listing the rows in detection
order, and detection walking their probes. Engines below are handed a row; only the API and
the edges look a format up here."""
