from .cli.tool import main

raise SystemExit(main())
