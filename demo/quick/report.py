"""A sales report, and what a misled copy of it might try next.

Run it with `python-sb demo/quick/report.py [OTHER_PORT]`, from any directory: python-sb uses
the `.py-sandboxes` next to this file. The first part is the job the rules were written for.
The second part is what a bug or an injected instruction could make the same program do;
under python-sb each attempt is refused, and the refusal is printed as it was raised.

Settings come from the environment the rules forward: REPORT_OUT (where report.json goes,
default: ./output next to this file) and REPORT_SERVICE_PORT (a report service on 127.0.0.1).
OTHER_PORT is a second loopback port that no rule allows.
"""

import csv
import json
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def build_report() -> dict[str, object]:
    totals: dict[str, float] = {}
    units = 0
    with open(os.path.join(HERE, "data", "sales.csv"), newline="") as f:
        for row in csv.DictReader(f):
            amount = int(row["units"]) * float(row["unit_price"])
            totals[row["region"]] = round(totals.get(row["region"], 0.0) + amount, 2)
            units += int(row["units"])
    return {"units": units, "revenue": round(sum(totals.values()), 2), "by_region": totals}


def send(port: int, text: str) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(text.encode() + b"\n")
        return conn.recv(200).decode().strip()


def read(path: str) -> str:
    with open(os.path.expanduser(path)) as f:
        return f.read()


def attempt(what: str, action) -> None:
    print(f"\n- {what}")
    try:
        result = action()
    except Exception as e:
        print(f"  {type(e).__name__}: {e}".replace("\n", "\n  "))
    else:
        print(f"  it worked: {result!r}")


def main() -> int:
    # -- the job --------------------------------------------------------------------------
    report = build_report()
    out_dir = os.environ.get("REPORT_OUT") or os.path.join(HERE, "output")
    path = os.path.join(out_dir, "report.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=2)
    print(
        f"report: {report['units']} units, revenue {report['revenue']:.2f}, by region {report['by_region']}"
    )
    print(f"wrote {path}")
    service_port = int(os.environ.get("REPORT_SERVICE_PORT", "8765"))
    try:
        print(f"report service on port {service_port} answered: {send(service_port, json.dumps(report))}")
    except ConnectionRefusedError as e:
        print(f"report service on port {service_port} is not running ({e})")

    # -- beyond the job -------------------------------------------------------------------
    print("\nBeyond the job:")
    attempt("read a private key: ~/.ssh/id_demo", lambda: read("~/.ssh/id_demo"))
    attempt("run a shell command: os.system('id')", lambda: os.system("id"))
    attempt("start a process: import subprocess", lambda: __import__("subprocess"))
    other = int(sys.argv[1]) if len(sys.argv) > 1 else service_port + 1
    attempt(f"send the data elsewhere: 127.0.0.1:{other}", lambda: send(other, "the secrets"))
    key = os.environ.get("DEMO_API_KEY")
    print(f"\n- read a secret of the environment: os.environ.get('DEMO_API_KEY')\n  -> {key!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
