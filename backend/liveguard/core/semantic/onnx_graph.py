"""The MiniLM encoder as an ONNX graph, built in memory from the safetensors weights.

No ONNX file is shipped with the model and torch is not installed to export one, so
the graph is written out here with ``onnx.helper`` (opset 20: ``LayerNormalization``,
exact ``Gelu``), from the same weights the numpy path reads. onnxruntime then runs it
about twice as fast as numpy's BLAS on one short text (MLAS kernels, fused nodes).
Inputs: ``ids`` (B, L) int64, ``pos_ids`` (L,) int64, ``maskbias`` (B, 1, 1, L) float
(0 for tokens, -1e9 for padding). Output: ``hidden`` (B, L, 384).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["build_minilm_onnx"]


class _Builder:
    """Collects nodes and initialisers; names every intermediate tensor uniquely."""

    def __init__(self, weights: dict[str, Any], config: dict[str, Any]) -> None:
        from onnx import ModelProto, helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.weights = weights
        self.eps = float(config["layer_norm_eps"])
        # Written straight into the model's graph: make_graph and make_model would each copy
        # every initialiser (the weights, 90 MB) once more, at the load's memory peak.
        self.model = ModelProto()
        self.graph = self.model.graph
        self.nodes: Any = self.graph.node
        self.counter = 0

    def init(self, name: str, value: Any) -> str:
        self.graph.initializer.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}_{self.counter}"

    def op(self, kind: str, inputs: list[str], **attrs: Any) -> str:
        out = self.fresh(kind.lower())
        self.nodes.append(self.helper.make_node(kind, inputs, [out], **attrs))
        return out

    def norm(self, x: str, prefix: str) -> str:
        scale = self.init(f"{prefix}.weight", self.weights[f"{prefix}.weight"])
        bias = self.init(f"{prefix}.bias", self.weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=self.eps)

    def dense(self, x: str, prefix: str) -> str:
        y = self.op("MatMul", [x, self.init(f"{prefix}.weight", self.weights[f"{prefix}.weight"].T)])
        return self.op("Add", [y, self.init(f"{prefix}.bias", self.weights[f"{prefix}.bias"])])

    def attention(self, x: str, att: str) -> str:
        w, op = self.weights, self.op
        qkv_w = np.concatenate([w[f"{att}.self.{n}.weight"] for n in ("query", "key", "value")]).T
        qkv_b = np.concatenate([w[f"{att}.self.{n}.bias"] for n in ("query", "key", "value")])
        qkv = op("MatMul", [x, self.init(f"{att}.qkv.weight", qkv_w)])
        qkv = op("Add", [qkv, self.init(f"{att}.qkv.bias", qkv_b)])
        q, k, v = self.fresh("q"), self.fresh("k"), self.fresh("v")
        self.nodes.append(self.helper.make_node("Split", [qkv, "split3"], [q, k, v], axis=-1))
        q = op("Transpose", [op("Reshape", [q, "shape_heads"])], perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [k, "shape_heads"])], perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [v, "shape_heads"])], perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k]), "scale"]), "maskbias"])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), "shape_hidden"])
        out = op("Add", [self.dense(context, f"{att}.output.dense"), x])
        return self.norm(out, f"{att}.output.LayerNorm")


def build_minilm_onnx(weights: dict[str, Any], config: dict[str, Any]) -> bytes:
    """The serialised ONNX model of a BERT encoder (MiniLM-L6-H384) with these weights."""
    from onnx import TensorProto, helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    b = _Builder(weights, config)
    b.init("word", weights["embeddings.word_embeddings.weight"])
    b.init("pos", weights["embeddings.position_embeddings.weight"])
    b.init("type0", weights["embeddings.token_type_embeddings.weight"][0])
    b.init("shape_heads", np.array([0, -1, heads, hidden // heads], dtype=np.int64))
    b.init("shape_hidden", np.array([0, -1, hidden], dtype=np.int64))
    b.init("scale", np.array(1.0 / np.sqrt(hidden // heads), dtype=np.float32))
    b.init("split3", np.array([hidden] * 3, dtype=np.int64))
    x = b.op("Add", [b.op("Gather", ["word", "ids"]), b.op("Gather", ["pos", "pos_ids"])])
    x = b.norm(b.op("Add", [x, "type0"]), "embeddings.LayerNorm")
    for i in range(int(config["num_hidden_layers"])):
        layer = f"encoder.layer.{i}"
        x = b.attention(x, f"{layer}.attention")
        inner = b.op("Gelu", [b.dense(x, f"{layer}.intermediate.dense")])
        x = b.norm(b.op("Add", [b.dense(inner, f"{layer}.output.dense"), x]), f"{layer}.output.LayerNorm")
    b.nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = b.graph
    graph.name = "minilm"
    graph.input.extend([
        helper.make_tensor_value_info("ids", TensorProto.INT64, ["B", "L"]),
        helper.make_tensor_value_info("pos_ids", TensorProto.INT64, ["L"]),
        helper.make_tensor_value_info("maskbias", TensorProto.FLOAT, ["B", 1, 1, "L"]),
    ])
    graph.output.append(helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "L", hidden]))
    model = b.model
    model.opset_import.append(helper.make_opsetid("", 20))
    model.ir_version = 10
    data: bytes = model.SerializeToString()
    return data
