from codeai_tui.cli.main import main

raise SystemExit(main())
