"""python -m sandbox serve --host 127.0.0.1 --port 8080 | python -m sandbox run FILE"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from sandbox.pool import SandboxPool
from sandbox.server import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox", description="tirlab's isolated Python sandbox")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="HTTP service compatible with Sandbox Fusion's POST /run_code")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=8080)
    p_serve.add_argument("--workers", type=int, default=None,
                         help="concurrent executions (default: TIRLAB_SANDBOX_WORKERS or 4 per core)")
    p_serve.add_argument("--queue", type=int, default=None,
                         help="requests allowed to wait beyond the workers before 429 (default: 2x workers)")
    p_run = sub.add_parser("run", help="run one file and print its Result as JSON")
    p_run.add_argument("file")
    p_run.add_argument("--timeout", type=float, default=10)
    p_run.add_argument("--memory-mb", type=int, default=1024)
    p_run.add_argument("--stdin-file", default=None, help="file whose content is the snippet's stdin")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if args.command == "serve":
        serve(args.host, args.port, workers=args.workers, queue=args.queue)
        return 0
    with open(args.file, encoding="utf-8") as f:
        code = f.read()
    stdin = ""
    if args.stdin_file:
        with open(args.stdin_file, encoding="utf-8") as f:
            stdin = f.read()
    with SandboxPool(size=1) as pool:
        result = pool.run(code, timeout_s=args.timeout, memory_mb=args.memory_mb, stdin=stdin)
    json.dump(result.to_dict(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
