"""The `gpu-advisor` command: serve, and the knowledge-base tools under `kb`."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel

from cli.launch import TOOLS, launch_spec
from cli.request_input import (
    FLAGS,
    RequestInputError,
    apply_flags,
    read_request_file,
    to_compare,
    to_request,
)
from engine.maintenance import (
    CHANGE_THRESHOLD,
    MAX_DROP_SHARE,
    NOT_REFRESHABLE,
    REFRESHABLE,
    SCHEMA_VERSION,
    BundleError,
    CatalogError,
    CatalogImport,
    EngineConfigError,
    KBInvalid,
    Problem,
    RefreshError,
    RefreshRefused,
    calibration_documents,
    checked_clouds,
    fetcher,
    import_catalog,
    kb_counts,
    latest_commit,
    lint,
    new_rule,
    open_bundle,
    paths,
    refresh_catalog,
    rule_cases,
    rules_document,
    schema_documents,
    shown,
    with_attribute_tables,
    write_bundle,
)
from engine.models.compare import CompareResponse
from engine.models.response import RecommendResponse
from engine.recommend import Advisor, InvalidRequest, load_advisor

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70
EXIT_UNAVAILABLE = 69  # sysexits.h EX_UNAVAILABLE: the address to serve on cannot be listened on


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return EXIT_USAGE
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        return 130
    except EngineConfigError as exc:
        print(f"gpu-advisor: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:  # last line of defence: a message, never a traceback
        print(
            f"gpu-advisor: internal error: {type(exc).__name__}: {exc} (please report this)", file=sys.stderr
        )
        return EXIT_INTERNAL
    return code


Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""what `add_subparsers` returns: the commands (or the `kb` commands) a function adds one to"""


def _parser() -> argparse.ArgumentParser:
    """The command line: the answering commands, then the KB-maintenance ones under `kb`, each added
    by a function of its own."""
    parser = argparse.ArgumentParser(prog="gpu-advisor", description="What should we run this on?")
    commands = parser.add_subparsers(title="commands")
    for add in (_serve_command, _mcp_command, _recommend_command, _report_command, _compare_command):
        add(commands)
    kb = commands.add_parser("kb", help="knowledge-base tools").add_subparsers(title="kb commands")
    for add in (
        _lint_command,
        _test_command,
        _import_command,
        _refresh_command,
        _schema_command,
        _docs_command,
        _new_rule_command,
        _stats_command,
        _bundle_command,
    ):
        add(kb)
    return parser


def _serve_command(commands: Commands) -> None:
    """gpu-advisor serve: the JSON API."""
    serve = commands.add_parser("serve", help="serve the JSON API")
    serve.add_argument("--host", default="127.0.0.1")
    # TCP ports are 16 bits; 0 is none (bind() takes it for "any free port", which no client could find)
    serve.add_argument("--port", type=_whole_number(1, 65535), default=8000, help="1 to 65535 (default 8000)")
    serve.add_argument(
        "--workers", type=_whole_number(1, None), default=1, help="worker processes (default 1)"
    )
    serve.add_argument(
        "--deadline-s",
        type=_seconds,
        default=None,
        help="the longest an answer may take before it is a 503 (default 10; $GPU_ADVISOR_DEADLINE_S)",
    )
    serve.add_argument(
        "--max-queue",
        type=_whole_number(1, 100_000),
        default=None,
        help="requests waiting or running per worker before more are shed with a 503 "
        "(default 128; $GPU_ADVISOR_MAX_QUEUE)",
    )
    _kb_option(serve)
    serve.add_argument(
        "--kb-bundle",
        metavar="FILE|URL",
        default=None,
        help="serve the KB of a bundle `gpu-advisor kb bundle` wrote (a path, or an http(s) or file URL), "
        "its bytes checked against the digest in its name; instead of --kb",
    )
    _rules_option(serve)
    serve.set_defaults(handler=_serve)


def _mcp_command(commands: Commands) -> None:
    """gpu-advisor mcp: the answers as tools for chat agents (api/mcp_server.py)."""
    what = (
        "Serve recommend, compare, explain_rule and list_models as Model Context Protocol tools a chat "
        "agent calls: over stdio (the default; an MCP client starts this command) or streamable HTTP at "
        "http://HOST:PORT/mcp."
    )
    mcp = commands.add_parser("mcp", help="serve the answers as MCP tools for chat agents", description=what)
    mcp.add_argument(
        "--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or streamable http"
    )
    mcp.add_argument("--host", default="127.0.0.1", help="with --transport http (default 127.0.0.1)")
    mcp.add_argument(
        "--port",
        type=_whole_number(1, 65535),
        default=8001,
        help="with --transport http: 1 to 65535 (default 8001)",
    )
    _kb_option(mcp)
    _rules_option(mcp)
    mcp.set_defaults(handler=_mcp)


def _recommend_command(commands: Commands) -> None:
    """gpu-advisor recommend."""
    advise = commands.add_parser(
        "recommend",
        help="recommend hardware for a workload",
        description="Recommend hardware for a workload given as a request file (YAML or JSON, the "
        "body of POST /recommend) and/or flags; flags override the file.",
    )
    advise.add_argument("request", nargs="?", type=Path, help="request file (.yaml, .yml or .json)")
    _request_flags(advise)
    advise.add_argument("--trace", action="store_true", help="also print the rule trace")
    advise.add_argument(
        "--launch",
        choices=TOOLS,
        help="print the first rented recommendation as a SkyPilot task or a dstack run configuration (YAML)",
    )
    advise.set_defaults(handler=_recommend)


def _report_command(commands: Commands) -> None:
    """gpu-advisor report: the procurement report as one HTML page."""
    report = commands.add_parser(
        "report",
        help="write the procurement report for a request: one HTML page with charts",
        description="The answer to a request (a file and/or the recommend flags) as one self-contained "
        "HTML page a reviewer can read, print to PDF and archive.",
    )
    report.add_argument("request", nargs="?", type=Path, help="request file (.yaml, .yml or .json)")
    _request_flags(report, json=False)
    report.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
    report.set_defaults(handler=_report)


def _compare_command(commands: Commands) -> None:
    """gpu-advisor compare: two to four hardware choices side by side."""
    compare = commands.add_parser(
        "compare",
        help="compare hardware choices for a workload, side by side",
        description='Judge two to four hardware choices for one workload ("why not X?"): for each, '
        "whether the job fits, a verdict in words and the best plan on it. The workload is a request "
        "file (the body of POST /recommend, or of POST /compare with its choices) and/or flags.",
    )
    compare.add_argument(
        "request", nargs="?", type=Path, help="request file (.yaml, .yml or .json); flags override it"
    )
    compare.add_argument(
        "--choice",
        action="append",
        default=[],
        metavar="GPU[:COUNT[:HOW]]",
        help="a choice to compare, e.g. nvidia-rtx-4090:1 or nvidia-h100-sxm:2:rent (HOW: buy, rent or "
        "owned); give it two to four times",
    )
    _request_flags(compare)
    compare.set_defaults(handler=_compare)


def _lint_command(commands: Commands) -> None:
    """gpu-advisor kb lint."""
    lint = commands.add_parser("lint", help="check every KB and rule file; exit 1 on any problem")
    _kb_option(lint)
    _rules_option(lint)
    _data_option(lint)
    _date_option(lint, "--today", "date to check 'not in the future' against (default: today)")
    lint.set_defaults(handler=_lint)


def _date_option(parser: argparse.ArgumentParser, flag: str, what: str) -> None:
    """An optional YYYY-MM-DD option (None when not given)."""
    parser.add_argument(flag, type=date.fromisoformat, default=None, help=what)


def _test_command(commands: Commands) -> None:
    """gpu-advisor kb test: the rules' own cases."""
    test = commands.add_parser("test", help="run every rule's own test cases")
    _rules_option(test)
    test.set_defaults(handler=_test_rules)


def _import_command(commands: Commands) -> None:
    """gpu-advisor kb import-catalog."""
    imp = commands.add_parser("import-catalog", help="generate kb/offers/ from the cloud catalog snapshot")
    _kb_option(imp)
    _data_option(imp)
    imp.set_defaults(handler=_import_catalog)


def _refresh_command(commands: Commands) -> None:
    """gpu-advisor kb refresh."""
    what = (
        "Read each cloud's current offers from SkyPilot's public catalog (every file at one commit), "
        "rewrite its data/cloud-catalog/ file and import the snapshot into kb/offers/ as import-catalog "
        "does, with the diff in docs/catalog-changes.md. Refused, with nothing written, when a provider "
        f"would lose more than --max-drop of its offers. Clouds: {', '.join(REFRESHABLE)}. Not: "
        + "; ".join(f"{cloud}: {why}" for cloud, why in NOT_REFRESHABLE.items())
        + "."
    )
    refresh = commands.add_parser(
        "refresh", help="fresh cloud prices from the SkyPilot catalog", description=what
    )
    _kb_option(refresh)
    _data_option(refresh)
    refresh.add_argument(
        "--clouds", help="comma-separated clouds to refresh (default: every one that can be)"
    )
    refresh.add_argument(
        "--from",
        dest="source",
        help="a copy of the catalog repository (a folder, or a URL its paths lie under) instead of GitHub",
    )
    refresh.add_argument("--commit", help="the catalog commit to read (default: the newest on GitHub)")
    refresh.add_argument(
        "--schema", default=SCHEMA_VERSION, help=f"catalog schema folder (default {SCHEMA_VERSION})"
    )
    refresh.add_argument(
        "--max-drop",
        type=_share,
        default=MAX_DROP_SHARE,
        help=f"largest share of one provider's offers a refresh may remove (default {MAX_DROP_SHARE:g})",
    )
    _date_option(
        refresh,
        "--as-of",
        "the date the offers are given (default: the commit's date when read from GitHub, else today)",
    )
    refresh.set_defaults(handler=_refresh_catalog)


def _share(text: str) -> float:
    """An argparse type: a share from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a share from 0 to 1")
    return value


def _schema_command(commands: Commands) -> None:
    """gpu-advisor kb schema."""
    schema = commands.add_parser("schema", help="write the JSON Schema of every KB kind into docs/schema/")
    schema.add_argument("--out", type=Path, default=paths.PROJECT_ROOT / "docs" / "schema")
    schema.add_argument("--check", action="store_true", help="only check that the files are up to date")
    schema.set_defaults(handler=_schema)


def _docs_command(commands: Commands) -> None:
    """gpu-advisor kb docs."""
    docs = commands.add_parser(
        "docs", help="write docs/rules.md from the rule files, and the attribute tables of docs/rule-facts.md"
    )
    _rules_option(docs)
    docs.add_argument("--out", type=Path, default=paths.PROJECT_ROOT / "docs" / "rules.md")
    docs.add_argument("--check", action="store_true", help="only check that the file is up to date")
    docs.set_defaults(handler=_docs)


def _new_rule_command(commands: Commands) -> None:
    """gpu-advisor kb new-rule."""
    new_rule = commands.add_parser("new-rule", help="scaffold rules/<category>/<id>.yaml")
    new_rule.add_argument("--category", required=True, help="folder under rules/, e.g. precision")
    new_rule.add_argument("--id", required=True, dest="rule_id", help="kebab-case rule id")
    _rules_option(new_rule)
    new_rule.set_defaults(handler=_new_rule)


def _stats_command(commands: Commands) -> None:
    """gpu-advisor kb stats."""
    stats = commands.add_parser("stats", help="count the entities of each kind")
    _kb_option(stats)
    stats.set_defaults(handler=_stats)


def _bundle_command(commands: Commands) -> None:
    """gpu-advisor kb bundle."""
    what = (
        "Write the KB as one file named by its SHA-256 (gpu-advisor-kb-<digest>.tar.gz), the same bytes "
        "for the same files: `serve --kb-bundle` serves it, so every replica serves one KB version."
    )
    bundle = commands.add_parser(
        "bundle", help="write the KB as one content-addressed file", description=what
    )
    _kb_option(bundle)
    bundle.add_argument("--out", type=Path, default=Path("."), help="folder to write it in (default: .)")
    bundle.set_defaults(handler=_bundle)


def _seconds(text: str) -> float:
    """An argparse type: a positive number of seconds, at most a day."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 86_400:  # also false for NaN
        raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, 86400], not {text!r}")
    return value


def _whole_number(low: int, high: int | None) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high` (no upper bound when None)."""
    span = f"from {low} to {high}" if high is not None else f"of at least {low}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be a whole number {span}, not {text!r}")
        return value

    return parse


def _request_flags(parser: argparse.ArgumentParser, *, json: bool = True) -> None:
    """One flag per request field (cli/request_input.py), --json (unless `json` is false), --kb and
    --rules."""
    for flag in FLAGS:
        if flag.kind in ("bool", "off"):
            parser.add_argument(flag.name, action="store_true", help=flag.help)
        else:
            kind = {"float": float, "int": int}.get(flag.kind, str)
            parser.add_argument(flag.name, type=kind, choices=flag.choices, help=flag.help)
    if json:
        parser.add_argument("--json", action="store_true", help="print the API's JSON response instead")
    _kb_option(parser)
    _rules_option(parser)


def _kb_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kb", type=Path, default=None, help="knowledge base folder (default: the embedded kb/)"
    )


def _rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules", type=Path, default=None, help="rules folder (default: the embedded rules/)"
    )


def _data_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="fact snapshots the offers are generated from (default: the embedded data/)",
    )


def _print_problems(problems: list[Problem]) -> None:
    for problem in problems:
        print(shown(str(problem)))  # a file name may hold an ESC sequence: shown, never run
    files = len({p.path for p in problems})
    print(f"{len(problems)} problem(s) in {files} file(s)", file=sys.stderr)


def _lint(args: argparse.Namespace) -> int:
    problems = lint(
        args.kb or paths.kb_dir(),
        args.rules or paths.rules_dir(),
        args.data or paths.data_dir(),
        args.today or date.today(),
    )
    if problems:
        _print_problems(problems)
        return EXIT_PROBLEMS
    print("kb lint: no problems")
    return EXIT_OK


def _test_rules(args: argparse.Namespace) -> int:
    problems, results = rule_cases(args.rules or paths.rules_dir())
    if problems:
        _print_problems(problems)
        return EXIT_PROBLEMS
    failed = [r for r in results if not r.passed]
    for result in failed:
        print(f"FAIL {result.rule}::{result.case}: {result.detail}")
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return EXIT_PROBLEMS if failed else EXIT_OK


def _import_catalog(args: argparse.Namespace) -> int:
    try:
        imported = import_catalog(args.kb or paths.kb_dir(), args.data or paths.data_dir())
    except CatalogError as exc:
        print(f"gpu-advisor: {shown(str(exc))}", file=sys.stderr)
        return EXIT_PROBLEMS
    if isinstance(imported, list):
        _print_problems(imported)
        return EXIT_PROBLEMS
    _print_import(imported)
    return EXIT_OK


def _print_import(imported: CatalogImport) -> None:
    result, diff, written, removed = imported.result, imported.diff, imported.written, imported.removed
    print(
        f"{len(result.files)} offers ({written} written, {removed} removed); "
        f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} prices changed by more "
        f"than {CHANGE_THRESHOLD:.0%} (docs/catalog-changes.md); {len(result.skipped)} rows not imported:"
    )
    for skipped in result.skipped:  # the snapshot's text, shown with its control characters escaped
        print(
            shown(
                f"  {skipped.source}: {skipped.instance_type} [{skipped.accelerator or 'no accelerator'}]: "
                f"{skipped.reason}"
            )
        )


def _refresh_catalog(args: argparse.Namespace) -> int:
    try:
        clouds = (
            checked_clouds(c.strip() for c in args.clouds.split(",") if c.strip())
            if args.clouds
            else REFRESHABLE
        )
        if args.source is not None and args.commit is None:
            raise RefreshError("--from needs --commit: the catalog commit the copy holds, recorded per row")
        commit, dated = (args.commit, None) if args.commit else latest_commit()
        refreshed = refresh_catalog(
            args.kb or paths.kb_dir(),
            args.data or paths.data_dir(),
            fetcher(args.source, commit),
            clouds,
            commit,
            args.as_of or dated or date.today(),
            max_drop=args.max_drop,
            schema=args.schema,
        )
    except (CatalogError, RefreshError, RefreshRefused) as exc:
        print(f"gpu-advisor: {shown(str(exc))}", file=sys.stderr)
        return EXIT_PROBLEMS
    if isinstance(refreshed, list):
        _print_problems(refreshed)
        return EXIT_PROBLEMS
    print(f"refreshed {', '.join(refreshed.clouds)} from the SkyPilot catalog at {refreshed.commit}")
    _print_import(refreshed.imported)
    return EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    out: Path = args.out
    stale = []
    for name, text in schema_documents().items():
        path = out / name
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(name)
            if not args.check:
                out.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"out of date: {', '.join(stale)} (run `gpu-advisor kb schema`)", file=sys.stderr)
        return EXIT_PROBLEMS
    print(f"{len(stale)} schema file(s) {'would change' if args.check else 'written'}")
    return EXIT_OK


def _docs(args: argparse.Namespace) -> int:
    text, problems = rules_document(args.rules or paths.rules_dir())
    if text is None:
        _print_problems(problems)
        return EXIT_PROBLEMS
    out: Path = args.out
    documents = {out: text}
    facts = out.parent / "rule-facts.md"
    if facts.exists():
        documents[facts] = with_attribute_tables(facts.read_text(encoding="utf-8"))
    documents.update(calibration_documents(out.parent))
    stale = [path for path, wanted in documents.items() if _read(path) != wanted]
    if args.check:
        for path in stale:
            print(f"out of date: {path.name} (run `gpu-advisor kb docs`)", file=sys.stderr)
        if stale:
            return EXIT_PROBLEMS
        print(f"{', '.join(path.name for path in documents)} up to date")
        return EXIT_OK
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(documents[path], encoding="utf-8")
        print(f"{path.name} written")
    if not stale:
        print(f"{', '.join(path.name for path in documents)} up to date")
    return EXIT_OK


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def _new_rule(args: argparse.Namespace) -> int:
    try:
        path = new_rule(args.rules or paths.rules_dir(), args.category, args.rule_id, date.today())
    except ValueError as exc:
        print(f"gpu-advisor: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {args.category}/{path.name}: edit it, then `gpu-advisor kb lint` and `gpu-advisor kb test`")
    return EXIT_OK


def _stats(args: argparse.Namespace) -> int:
    counts, version, problems = kb_counts(args.kb or paths.kb_dir())
    if version is None:
        _print_problems(problems)
        return EXIT_PROBLEMS
    for kind, count in counts.items():
        print(f"{kind:14} {count:5}")
    print(f"{'version':14} {version}")
    return EXIT_OK if not problems else EXIT_PROBLEMS


def _bundle(args: argparse.Namespace) -> int:
    kb_root = args.kb or paths.kb_dir()
    _, version, problems = kb_counts(kb_root)
    if version is None or problems:  # a bundle is published to be served: a KB with problems is not
        _print_problems(problems)
        print("gpu-advisor: no bundle written: the knowledge base has problems", file=sys.stderr)
        return EXIT_PROBLEMS
    try:
        written = write_bundle(kb_root, args.out)
    except (BundleError, OSError) as exc:
        print(f"gpu-advisor: no bundle written: {exc}", file=sys.stderr)
        return EXIT_PROBLEMS
    print(f"{written}  (kb version {version})")
    return EXIT_OK


def _recommend(args: argparse.Namespace) -> int:
    def show(response: RecommendResponse) -> int:
        if args.launch:
            text, why = launch_spec(response, args.launch)
            if why:  # why there is no spec, or which better options the tool cannot launch
                print(f"gpu-advisor: {why}", file=sys.stderr)
            if text is None:
                return EXIT_PROBLEMS
            print(text, end="")
            return EXIT_OK
        from cli.report import print_response  # rich only when a table is printed

        print_response(response, show_trace=args.trace)
        return EXIT_OK

    return _answer(
        args, lambda document: to_request(apply_flags(document, vars(args))), Advisor.recommend, show
    )


def _report(args: argparse.Namespace) -> int:
    def write(page: str) -> int:
        output: Path = args.output
        try:
            output.write_text(page, encoding="utf-8")
        except OSError as exc:
            print(f"gpu-advisor: {output}: cannot write it ({exc.strerror or exc})", file=sys.stderr)
            return EXIT_USAGE
        print(f"wrote {output} ({len(page) // 1024} KB)")
        return EXIT_OK

    return _answer(
        args, lambda document: to_request(apply_flags(document, vars(args))), Advisor.report, write
    )


def _compare(args: argparse.Namespace) -> int:
    def show(response: CompareResponse) -> int:
        from cli.report import print_comparison  # rich only when a table is printed

        print_comparison(response)
        return EXIT_OK

    return _answer(
        args, lambda document: to_compare(document, vars(args), args.choice), Advisor.compare, show
    )


Body = TypeVar("Body")
Answer = TypeVar("Answer")


def _answer(
    args: argparse.Namespace,
    body_of: Callable[[dict[str, Any]], Body],
    ask: Callable[[Advisor, Body], Answer],
    show: Callable[[Answer], int],
) -> int:
    """Read the request file and flags into a body, ask the advisor over the KB, and print its answer
    (the API's JSON with --json, unless a --launch spec is asked for); bad input is a message naming
    the field, exit status 2."""
    try:
        document = read_request_file(args.request) if args.request else {}
        body = body_of(document)
    except RequestInputError as exc:
        print(f"gpu-advisor: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        advisor = load_advisor(
            args.kb or paths.kb_dir(), args.rules or paths.rules_dir(), paths.data_dir(), date.today()
        )
    except KBInvalid as exc:
        _print_problems(exc.problems)
        return EXIT_PROBLEMS
    try:
        response = ask(advisor, body)
    except InvalidRequest as exc:
        print(f"gpu-advisor: {'.'.join(exc.loc)}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "json", False) and not getattr(args, "launch", None) and isinstance(response, BaseModel):
        print(response.model_dump_json(indent=2))
        return EXIT_OK
    return show(response)


def _serve(args: argparse.Namespace) -> int:
    if args.kb_bundle is not None and args.kb is not None:
        print("gpu-advisor: not starting: give --kb or --kb-bundle, not both", file=sys.stderr)
        return EXIT_USAGE
    kb_root = (args.kb or paths.kb_dir()).resolve()
    if args.kb_bundle is not None:
        try:  # unpacked into a private folder of its own; the workers and reloads read it from there
            kb_root, digest = open_bundle(args.kb_bundle)
        except BundleError as exc:
            print(f"gpu-advisor: not starting: {exc}", file=sys.stderr)
            return EXIT_PROBLEMS
        print(f"gpu-advisor: serving the KB of bundle {digest}", file=sys.stderr)
    rules_root = (args.rules or paths.rules_dir()).resolve()
    try:
        advisor = load_advisor(kb_root, rules_root, paths.data_dir(), date.today())
    except KBInvalid as exc:
        _print_problems(exc.problems)
        print("gpu-advisor: not starting: the knowledge base or rules have problems", file=sys.stderr)
        return EXIT_PROBLEMS
    from api.listen import why_not_listening

    problem = why_not_listening(args.host, args.port)
    if problem:
        print(
            f"gpu-advisor: not starting: cannot listen on {args.host}:{args.port}: {problem}", file=sys.stderr
        )
        return EXIT_UNAVAILABLE
    import uvicorn

    from api.admission import DEADLINE_ENV, QUEUE_ENV, Admission
    from api.app import WARM_CHARTS_ENV, create_app
    from api.metrics import uvicorn_log_config

    os.environ[WARM_CHARTS_ENV] = "1"  # a service's first report should not wait for its chart process

    # Every worker reads its limits from the environment (api/admission.py `Admission.from_env`).
    if args.deadline_s is not None:
        os.environ[DEADLINE_ENV] = str(args.deadline_s)
    if args.max_queue is not None:
        os.environ[QUEUE_ENV] = str(args.max_queue)
    try:
        Admission.from_env()
    except ValueError as exc:
        print(f"gpu-advisor: not starting: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.workers == 1:  # one process: serve what was just checked rather than reading it again
        # api/metrics logs each request as one JSON line; uvicorn's own access line would repeat it
        uvicorn.run(
            create_app(advisor=advisor),
            host=args.host,
            port=args.port,
            access_log=False,
            log_config=uvicorn_log_config(),
        )
        return EXIT_OK
    from api.generations import STATE_ENV, WORKERS_ENV, Generations, private_folder

    # Every worker starts on the KB just checked, published in a folder they share, and follows
    # the generations a reload publishes there (api/generations.py).
    generations = Generations(private_folder(), args.workers)
    if advisor.checked is not None:
        generations.publish(advisor.checked)
    os.environ["GPU_ADVISOR_KB"], os.environ["GPU_ADVISOR_RULES"] = str(kb_root), str(rules_root)
    os.environ[STATE_ENV], os.environ[WORKERS_ENV] = str(generations.folder), str(args.workers)
    # /metrics adds up every worker's figures from files in a folder they share (api/metrics.py); a
    # folder the operator names is used as it is, else a fresh private one for this run
    from api.metrics import MULTIPROC_ENV

    own_metrics = None if os.environ.get(MULTIPROC_ENV) else private_folder()
    if own_metrics is not None:
        os.environ[MULTIPROC_ENV] = str(own_metrics)
    try:
        uvicorn.run(
            "api.app:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            access_log=False,
            log_config=uvicorn_log_config(),
        )
    finally:
        shutil.rmtree(generations.folder, ignore_errors=True)
        if own_metrics is not None:
            shutil.rmtree(own_metrics, ignore_errors=True)
    return EXIT_OK


def _mcp(args: argparse.Namespace) -> int:
    """The MCP server over the checked KB; refused, with the KB's problems, as `serve` is. Everything
    it says goes to stderr: over stdio, stdout is the protocol's."""
    try:
        advisor = load_advisor(
            args.kb or paths.kb_dir(), args.rules or paths.rules_dir(), paths.data_dir(), date.today()
        )
    except KBInvalid as exc:
        with contextlib.redirect_stdout(sys.stderr):
            _print_problems(exc.problems)
        print("gpu-advisor: not starting: the knowledge base or rules have problems", file=sys.stderr)
        return EXIT_PROBLEMS
    # the SDK is imported only now: it would cost every other command a second
    if args.transport == "stdio":
        from api.mcp_server import serve_stdio

        serve_stdio(advisor)
        return EXIT_OK
    from api.listen import why_not_listening

    if problem := why_not_listening(args.host, args.port):
        where = f"{args.host}:{args.port}"
        print(f"gpu-advisor: not starting: cannot listen on {where}: {problem}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    from api.mcp_server import serve_http

    serve_http(advisor, args.host, args.port)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
