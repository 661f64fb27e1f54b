"""Inline reasoning: reasoning a model wrote into its visible text, in one of the dialects.

One concept per module, each importing only those before it:

- `dialects`: the table (data only): one row per dialect, the tool-call markers;
- `results`: what extraction gives (`InlineExtraction`, its detections and removed spans);
- `markers`: the table compiled: each marker's role, and one guarded pattern per first
  character (a new row is found everywhere, its first character included);
- `search`: finding markers (split searches with remembered matches, closing fences, the
  quick check for a text with none);
- `sinks`: content and thinking as they are written, each piece with its source position;
- `scanner`: the one scanner, over a whole text (`scan`), a live one (`IncrementalExtractor`)
  and a recorded stream (`extract_chunks`);
- `shortcuts`: `extract`, which reads the common texts without the scanner.
"""
