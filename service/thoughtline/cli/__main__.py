"""`python -m thoughtline.cli`."""

from thoughtline.cli.commands import main

raise SystemExit(main())
