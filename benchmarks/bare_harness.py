"""A bare Pulumi mock-runtime harness: what a Pulumi user writes to run a program under mocks, and nothing else.

    python benchmarks/bare_harness.py STACK_FOLDER

It runs STACK_FOLDER/__main__.py under ``pulumi.runtime.set_mocks`` with a minimal ``Mocks`` (outputs = inputs, and
the one invoke the programs need, ``ecs.getImages``), the way Pulumi's unit-testing guide does
(https://www.pulumi.com/docs/iac/guides/testing/unit/), waiting for every registration to finish. No planning, no
rendering, no recording, no collector tuning, no cache: the yardstick ``bench_scaling.py`` compares
``trainstack preview`` with. Exits 0 after the run and prints the number of resources registered.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import sys
from pathlib import Path


def main(folder: str) -> int:
    import pulumi
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    registered = []

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args):
            registered.append(args.typ)
            return f"{args.name}-id", dict(args.inputs)

        def call(self, args):
            if args.token == "alicloud:ecs/getImages:getImages":
                return {"images": [{"id": "m-mock", "name": "aliyun_3_x64_20G_alibase_mock.vhd"}], "ids": ["m-mock"],
                        "id": "images"}
            return {}

    stack_dir = Path(folder).resolve()
    plan = json.loads((stack_dir / "plan.json").read_text())
    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.set_all_config({"alicloud:region": plan["region"],
                                   "trainstack:sharedFsAddress": "cpfs-export.example.invalid"})
    pulumi.runtime.set_mocks(Mocks(), project=plan["name"], stack=plan["stack"], preview=True)
    os.chdir(stack_dir)
    sys.path.insert(0, str(stack_dir))
    _sync_await(run_pulumi_func(lambda: runpy.run_path("__main__.py", run_name="__main__")))
    print(len(registered))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
