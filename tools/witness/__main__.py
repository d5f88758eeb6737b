from .witness import main

raise SystemExit(main())
