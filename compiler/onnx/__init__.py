"""ONNX front end: load a model and turn its graph into a ``Program``."""
