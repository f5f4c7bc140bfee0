from rag_qa_arena.cli import main

raise SystemExit(main())
