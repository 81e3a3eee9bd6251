"""``python -m trainer``: see trainer.cli."""

from trainer.cli import main

raise SystemExit(main())
