"""Builds kafkaev's Cython extensions.

KAFKAEV_DEBUG=1 turns on line tracing, bounds and wraparound checks and C asserts,
for hunting a crash; the default build is the fast one. KAFKAEV_PROBES=1 compiles the
latency probes in (kafkaev/protocol/probes.pyx, read by bench/breakdown.py); without it
every probe call site is compiled out.
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("KAFKAEV_DEBUG") == "1"
PROBES = os.environ.get("KAFKAEV_PROBES") == "1"

# -g0: the interpreter's default CFLAGS add -g, which triples compile time and memory for
# the large generated codec module; a debug build gets symbols back.
compile_args = ["-O2", "-g0"] if not DEBUG else ["-O0", "-g"]
macros = [] if not DEBUG else [("CYTHON_TRACE_NOGIL", "1")]
if not DEBUG:
    macros.append(("NDEBUG", "1"))
if PROBES:
    macros.append(("KAFKAEV_PROBES", "1"))

directives = {
    "language_level": "3",
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "cdivision": not DEBUG,
    "initializedcheck": DEBUG,
    "linetrace": DEBUG,
    "embedsignature": True,
}

# All extensions by default; KAFKAEV_EXTENSIONS=kafkaev.protocol.codec builds a subset
# while another module is mid-change.
EXTENSIONS = (
    "kafkaev.protocol.codec",
    "kafkaev.protocol.probes",
    "kafkaev.protocol.connection",
    "kafkaev.producer.core",
    "kafkaev.consumer.delivery",
    "kafkaev.consumer.buffer",
    "kafkaev.aio.pull",
    "kafkaev.aio.send",
    "kafkaev.handlers.inline",
)
names = os.environ["KAFKAEV_EXTENSIONS"].split(",") if os.environ.get("KAFKAEV_EXTENSIONS") else list(EXTENSIONS)

extensions = [
    Extension(
        name,
        [name.replace(".", "/") + ".pyx"],
        extra_compile_args=compile_args,
        define_macros=macros,
    )
    for name in names
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        include_path=["."],
    ),
)
