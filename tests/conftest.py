import os
import sys

# tests import their dense reference helpers from tests/reference.py
sys.path.insert(0, os.path.dirname(__file__))
