from codeai_tui.cli import main

raise SystemExit(main())
