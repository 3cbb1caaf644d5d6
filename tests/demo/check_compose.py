#!/usr/bin/env python3
"""Checks docker-compose.yml without Docker: it parses as YAML (anchors and merge keys
included) and describes what the README promises: five independent Redis masters, each with
appendonly yes and appendfsync always, no replication, on distinct loopback ports; anything else
(the demo's storage Redis) only behind a profile and on a port of its own.

Exit 0: fine; 1: a problem (printed); 77: PyYAML is missing (Debian: python3-yaml), skipped.
"""
import sys

try:
    import yaml
except ImportError:
    print("python3-yaml is not installed: skipped")
    sys.exit(77)


def option(args, name):
    """The value after --name in a redis-server command line, or None."""
    flag = "--" + name
    for i, arg in enumerate(args[:-1]):
        if arg == flag:
            return args[i + 1]
    return None


def main(path):
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    problems = []
    services = doc.get("services") or {}
    masters = {n: s for n, s in services.items() if not s.get("profiles")}
    others = {n: s for n, s in services.items() if s.get("profiles")}

    if len(masters) != 5:
        problems.append(f"expected 5 masters started by default, found {sorted(masters)}")
    host_ports = {}
    for name, s in sorted(services.items()):
        command = s.get("command") or []
        args = command.split() if isinstance(command, str) else [str(a) for a in command]
        if not args or args[0] != "redis-server":
            problems.append(f"{name}: command does not start redis-server: {command!r}")
        if any(a.lstrip("-").lower() in ("replicaof", "slaveof") for a in args):
            problems.append(f"{name}: replicates from another server; masters must be independent")
        for port in s.get("ports") or []:
            parts = str(port).split(":")
            if len(parts) != 3 or parts[0] != "127.0.0.1":
                problems.append(f"{name}: port {port!r} is not published on 127.0.0.1 only")
                continue
            if parts[1] in host_ports:
                problems.append(f"{name}: host port {parts[1]} also used by {host_ports[parts[1]]}")
            host_ports[parts[1]] = name
        if name in masters:
            if option(args, "appendonly") != "yes":
                problems.append(f"{name}: needs --appendonly yes")
            if option(args, "appendfsync") != "always":
                problems.append(f"{name}: needs --appendfsync always")
            if not s.get("ports"):
                problems.append(f"{name}: publishes no port")
    volumes = [str(v).split(":")[0] for s in masters.values() for v in s.get("volumes") or []]
    if len(volumes) != len(set(volumes)):
        problems.append(f"masters share a data volume: {volumes}")
    for name in others:
        if "depends_on" in services[name] or "links" in services[name]:
            problems.append(f"{name}: must not be tied to the lock masters")

    for p in problems:
        print("docker-compose.yml:", p)
    if not problems:
        print(f"ok: masters {sorted(masters)}, behind profiles {sorted(others)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docker-compose.yml"))
