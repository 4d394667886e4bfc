"""Generates the protobuf classes at build time (setup.py build_py), so an
installed flowsched_client carries flowsched/v1/*_pb2.py made by the local
protoc from the repository's proto/ (FLOWSCHED_PROTO_DIR overrides it)."""

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithProtos(build_py):
    def run(self):
        super().run()
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "_flowsched_protos_gen", HERE / "flowsched_client" / "_generate.py")
        gen = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen)
        proto_dir = Path(os.environ.get("FLOWSCHED_PROTO_DIR") or HERE.parents[1] / "proto")
        out = Path(self.build_lib) / "_flowsched_gen"
        gen.generate(proto_dir, out, force=True)
        # Installed next to flowsched_client as the top-level package
        # `flowsched` (flowsched.v1.events_pb2, ...): the generated modules
        # import each other by that name.
        target = Path(self.build_lib) / "flowsched"
        if target.exists():
            import shutil
            shutil.rmtree(target)
        (out / "flowsched").rename(target)
        out.rmdir()


setup(cmdclass={"build_py": BuildWithProtos})
