"""The gemini provider, in one folder: its body reader (`body`), stream assembler
(`stream`), request reader (`request`), replay parts and turn rebuilder (`replay`), shape
probes (`shape`) and row (`row`)."""
