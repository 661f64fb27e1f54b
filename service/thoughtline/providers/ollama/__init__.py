"""The ollama provider, in one folder: its body reader (`body`), stream assembler
(`stream`), request reader (`request`), replay parts and turn rebuilder (`replay`), shape
probes (`shape`), what its URLs say to capture (`endpoint`) and row (`row`)."""
