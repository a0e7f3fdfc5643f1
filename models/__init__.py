"""perfbot's benchmark zoo: architecture-faithful ONNX models built offline with seeded weights.

    from models.manifest import load_manifest
    from models.cache import build_model
    from models.inputs import make_feeds

    row = load_manifest().get("torchvision-resnet50")
    path = build_model(row)                 # cached fp32 .onnx (built on first use)
    feeds = make_feeds(row, path, batch=1)  # seeded inputs per the manifest

See models/README.md for the architectures, the parameter-count rule and the DLRM table cap.
"""
