"""One folder per provider format (`<format>/`: its body reader, stream assembler, request
reader, replay pieces, shape probes, endpoint and row), the registry listing the rows in
detection order, detection walking their probes, and `endpoints` listing what capture asks of
the URLs (light: no reader behind it). Engines below are handed a row; only the API and the
edges look a format up here."""
