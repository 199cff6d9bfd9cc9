"""``fpq config``: a configuration as the register writes and tables that apply it, for a
host without Python (``fpq.config_export``: JSON, C, ``$readmemh``). The configuration comes
from ``--config`` (a JSON object of fields), or ``--scenario`` (the bottleneck queue manager
of a simulator scenario: why the command lives in the simulator's package), and ``--set``."""

import json
import sys

from fpq.cli_options import add_build_arguments, build_from_args, parse_fixed

__all__ = ["add_arguments", "main"]


def add_arguments(p):
    from fpq.config_export import FORMATS
    p.add_argument("--format", choices=FORMATS, required=True,
                   help="json: one file (- for standard output); c: a .c file and its .h "
                        "beside it, with fpq_apply_config(); readmemh: a folder, one file "
                        "per table and bus_writes.hex")
    p.add_argument("-o", required=True, metavar="PATH",
                   help="the output: a file (json), the .c file (c), a folder (readmemh)")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE",
                   help="a configuration field (fpq.Config, docs/REGISTERS.md "
                        "\"Configuration fields\"), e.g. --set mode=red --set tick_hz=100e6 "
                        "(repeatable; over --config and --scenario)")
    p.add_argument("--config", metavar="FILE.json", default=None,
                   help="configuration fields as a JSON object (Config.to_dict(): hash_key "
                        "as hex; fields left out take their defaults)")
    p.add_argument("--scenario", metavar="FILE.toml", default=None,
                   help="the bottleneck queue manager's configuration of a simulator "
                        "scenario (fpq sim: a file or a shipped scenario's name)")
    p.add_argument("--key", metavar="HEX", default=None,
                   help="the hash key, 40 hex digits, not weak (docs/RELIABILITY.md, \"Key "
                        "handling\"). Default: the key --config, --scenario or --set gives, "
                        "else one drawn from the operating system (never Config's public "
                        "default); so are hash_mix_key, seed_decide and seed_clear. The "
                        "outputs that hold them (the JSON file, the .c file, bus_writes.hex) "
                        "are written with mode 0600; the .h and the tables' files hold none")
    add_build_arguments(p)


def _config_file(path):
    """``--config``: the fields of a JSON file and the key fields it gives (``{name: what
    gave it}``)."""
    from fpq.fields import SECRET_FIELDS
    try:
        with open(path, "rb") as f:
            values = json.loads(f.read().decode("utf-8"))
    except OSError as exc:
        raise ValueError(f"--config: cannot read {path!r}: {exc.strerror}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"--config: {path}: not valid JSON: {exc}") from None
    if not isinstance(values, dict):
        raise ValueError(f"--config: {path}: must be a JSON object of configuration fields "
                         f"(as Config.to_dict() writes them)")
    return values, {name: f"--config {path}: {name}" for name in SECRET_FIELDS
                    if name in values}


def _scenario(name):
    """``--scenario``: the fields of a scenario's queue manager, the key fields it gives and
    its build."""
    from fpq.fields import SECRET_FIELDS
    from .scenario import load, queue_config, scenario_path
    try:
        scenario = load(scenario_path(name, "--scenario"))
    except OSError as exc:
        raise ValueError(f"--scenario: cannot read {name!r}: {exc.strerror}") from None
    config = queue_config(scenario)
    # only a key the scenario names is given: one it leaves out is Config's public default,
    # which hardware_keys replaces with a drawn one
    given = {field: f"--scenario {name}: queue.{field}" for field in SECRET_FIELDS
             if field in scenario["queue"]["params"]}
    return config.to_dict(), given, config.build


def _configuration(args):
    """The configuration of the arguments, its keys checked or drawn for hardware, and the
    names of the keys drawn."""
    from fpq.config import Build, Config
    from fpq.fields import SECRET_FIELDS
    from fpq.keys import check_key, hardware_keys, parse_key
    if args.config is not None and args.scenario is not None:
        raise ValueError("--scenario: give --config or --scenario, not both")
    # the keys given, and by what: only these are used, every other key is drawn
    values, given, defaults = {}, {}, Build()
    if args.config is not None:
        values, given = _config_file(args.config)
    if args.scenario is not None:
        values, given, scenario_build = _scenario(args.scenario)
        defaults = Build(avg_delay=scenario_build.avg_delay)
    build = build_from_args(args, defaults)
    sets = parse_fixed(args.set, option="--set")
    values.update(sets)
    given.update({name: f"--set {name}" for name in SECRET_FIELDS if name in sets})
    if args.key is not None:
        if "hash_key" in sets:
            raise ValueError("--key: give the key once, with --key or --set hash_key=..., "
                             "not both")
        values["hash_key"] = check_key(parse_key(args.key, "--key"), "hash_key", "--key")
        given["hash_key"] = "--key"
    config = Config.from_dict(values, build=build)
    keys, drawn = hardware_keys(build, {name: (config.values[name], what)
                                        for name, what in given.items()})
    return config.replace(**keys), drawn


def main(args):
    from fpq.config_export import key_outputs, outputs, register_writes, table_contents
    from fpq.fields import FIELD_BY_NAME
    from fpq.output_files import write_files
    config, drawn = _configuration(args)
    private = key_outputs(config, args.format, args.o)
    paths = write_files(outputs(config, args.format, args.o), private=private)
    tables = table_contents(config)
    for name in drawn:
        option = "--key HEX" if name == "hash_key" else \
            f"--set {name}={'N' if FIELD_BY_NAME[name].type == 'int' else 'HEX'}"
        print(f"{name}: drawn from the operating system's random source ({option} gives "
              f"one)", file=sys.stderr)
    for path in sorted(private):
        print(f"{path}: holds the keys and seeds (mode 0600): keep it secret",
              file=sys.stderr)
    if args.o == "-" and args.format == "json":
        print("standard output: holds the keys and seeds: keep it secret", file=sys.stderr)
    print(f"{', '.join(paths) or 'standard output'}: {len(register_writes(config))} register "
          f"writes (the last is the commit), tables "
          + ", ".join(f"{name} ({len(v)} words)" for name, v in tables.items()),
          file=sys.stderr)
    return 0
