from pgknee.cli import main

raise SystemExit(main())
