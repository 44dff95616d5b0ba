try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C before the command starts: as during it, no traceback
    import sys

    print("linlap: interrupted", file=sys.stderr)
    raise SystemExit(130)

raise SystemExit(main())
