"""One folder per provider format (`<format>/`: its body reader, stream assembler, and its
row), the registry listing the rows in detection order, and detection. Engines below are
handed a row; only the API and the edges look a format up here."""
