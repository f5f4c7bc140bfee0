"""``rag-qa-arena requests run DIR``: an export's request files (``judge``/``tournament --export-requests``) run
on Ray Data with Ray's LLM processors, results written in the batch output format that ``--import-results``
reads (docs/scaling.md)."""

from __future__ import annotations

import argparse
import json
import sys

from lfrqa.errors import RagQaArenaError
from metric_arena.llm.batch import HttpEndpoints, VllmEngine, run_requests
from rag_qa_arena._options import api_key, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("requests", help="Run exported request files on other engines (Ray Data).",
                                  description="Run the request files of `judge --export-requests` or `tournament "
                                              "--export-requests` elsewhere and write their answers for "
                                              "`judge --import-results`.")
    commands = group.add_subparsers(dest="requests_command", metavar="ACTION", required=True)
    parser = commands.add_parser(
        "run", help="send every request file of DIR through Ray Data; write batch-format results to --out",
        description="Read every *.jsonl request file under DIR (any number, any shard layout), send the requests "
                    "with Ray Data's LLM processors and write one OpenAI batch-output line per request to "
                    "OUT/<same folder>/<file>.pass-NNNNN.jsonl, status code and error body kept. A failed request "
                    "never stops the job: it is written as an error line, and a later run with --retry-failed "
                    "sends exactly the requests no pass answered yet. OUT/passes.json records each pass.",
        epilog="example: rag-qa-arena requests run export/ --out results/ --base-url http://gpu1:8000/v1 "
               "--base-url http://gpu2:8000/v1; then rag-qa-arena judge --import-results results/*/*.jsonl "
               "--export-dir export/ ... (the export's --judge, --base-url / --endpoint-name)")
    parser.add_argument("dir", metavar="DIR", help="the --export-requests folder (or any folder of request files)")
    parser.add_argument("--out", required=True, metavar="OUT", help="folder for the result files (outside DIR)")
    parser.add_argument("--engine", choices=["ray"], default="ray", help="what runs the requests (default: ray)")
    parser.add_argument("--base-url", action="append", metavar="URL",
                        help="an OpenAI-compatible server, e.g. http://gpu1:8000/v1; repeat it for several: one "
                             "Ray HTTP processor each, the requests shared among them (by success after the first "
                             "pass)")
    parser.add_argument("--vllm", metavar="MODEL", help="run the requests on GPUs with Ray's vLLM engine processor "
                                                         "(a Hub id or a folder) instead of servers")
    parser.add_argument("--retry-failed", action="store_true",
                        help="another pass into the same --out: send only the requests no earlier pass answered")
    parser.add_argument("--api-key", metavar="KEY", help="bearer token for the servers (default: $OPENAI_API_KEY; "
                                                         "never written anywhere)")
    parser.add_argument("--concurrency", type=positive_int, default=1, metavar="N",
                        help="HTTP actors per server, or vLLM engine replicas (default: 1)")
    parser.add_argument("--batch-size", type=positive_int, default=None, metavar="N",
                        help="requests per batch: in flight at once per HTTP actor (default: 16), or per vLLM "
                             "engine call (default: 64)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="the longest one request may take, start to last byte (default: 120)")
    parser.add_argument("--tensor-parallel-size", type=positive_int, default=1, metavar="N",
                        help="with --vllm: GPUs per engine replica (default: 1)")
    parser.add_argument("--max-model-len", type=positive_int, default=None, metavar="TOKENS",
                        help="with --vllm: the engine's context length (default: the model's)")
    parser.add_argument("--ray-address", metavar="ADDRESS",
                        help="a running Ray cluster (e.g. auto, ray://head:10001; default: $RAY_ADDRESS, else a "
                             "local Ray started here)")
    parser.add_argument("--num-cpus", type=positive_int, default=None, metavar="N",
                        help="CPUs of the local Ray started here (default: all)")
    parser.add_argument("--no-progress", action="store_true", help="no Ray Data progress bars")
    parser.set_defaults(func=run_command)


def _engine(args: argparse.Namespace):
    if bool(args.base_url) == bool(args.vllm):
        raise RagQaArenaError("give the servers (--base-url URL, repeated) or --vllm MODEL, not both and not neither")
    if args.vllm:
        engine_kwargs = {"tensor_parallel_size": args.tensor_parallel_size}
        if args.max_model_len:
            engine_kwargs["max_model_len"] = args.max_model_len
        return VllmEngine(model=args.vllm, engine_kwargs=engine_kwargs, concurrency=args.concurrency,
                          batch_size=args.batch_size or 64)
    for url in args.base_url:
        if not url.startswith(("http://", "https://")):
            raise RagQaArenaError(f"--base-url {url!r} is not an http(s) URL: give e.g. http://localhost:8000/v1")
    return HttpEndpoints(urls=tuple(args.base_url), api_key=api_key(args), concurrency=args.concurrency,
                         batch_size=args.batch_size or 16, timeout=args.timeout)


def run_command(args: argparse.Namespace) -> int:
    record = run_requests(args.dir, args.out, engine=_engine(args), retry_failed=args.retry_failed,
                          progress=not args.no_progress, ray_address=args.ray_address, num_cpus=args.num_cpus)
    if not record["n_requests"]:
        print(f"pass {record['pass']}: nothing to send: every request of {args.dir} has an answer in {args.out}",
              file=sys.stderr)
        return 0
    for name, counts in record["endpoints"].items():
        failed = ", ".join(f"{code}: {n:,}" for code, n in counts["failed"].items())
        print(f"  {name}: {counts['sent']:,} sent, {counts['ok']:,} answered" + (f", failed ({failed})" if failed
                                                                                  else ""), file=sys.stderr)
    still = record["still_failed"]
    print(f"pass {record['pass']}: {record['n_ok']:,} of {record['n_requests']:,} requests answered in "
          f"{record['seconds']:.1f} s; results in {args.out} (passes.json)", file=sys.stderr)
    if still:
        print(f"{sum(still.values()):,} requests still failed ({', '.join(f'{k}: {v:,}' for k, v in still.items())}): "
              "run the same command with --retry-failed to send only those", file=sys.stderr)
    else:
        depth = len(record["files"][0].split("/")) if record["files"] else 2
        pattern = "/".join([args.out.rstrip("/")] + ["*"] * (depth - 1) + ["*.jsonl"])
        print(f"every request is answered: rag-qa-arena judge --import-results {pattern} "
              f"--export-dir {args.dir} (with the export's --judge and --base-url / --endpoint-name)", file=sys.stderr)
    print(json.dumps({k: record[k] for k in ("pass", "n_requests", "n_ok", "n_failed", "still_failed")}))
    return 0
