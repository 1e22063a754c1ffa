"""The compilers' tests import kernels.py from this folder."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
