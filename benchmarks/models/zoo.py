"""zoo.py - the models of the model suite (benchmarks/models/run.py), built offline.

Every builder makes its model from a constructor or a config object with random
weights (no download: `weights=None`, `pretrained=False`, a `*Config`), puts it
in eval mode and returns a `Built`: the module, its example inputs for a batch
size (an ordered dict name -> tensor, on the CPU in f32 / int64; run.py moves
and casts them) and the names of its outputs. A module's forward takes the
inputs positionally in that order and returns one tensor or a tuple of tensors
(the wrappers below turn model outputs with dicts into tuples), so that
`torch.onnx.export` and every peer see the same function.

MODELS maps a name to a `Spec`: the builder, the batch sizes the suite runs on
the GPU and on the CPU (batch 1 and a throughput batch), and whether it is a
small CPU-sized variant (#39). `gpu_models()` / `cpu_models()` are the defaults
of run.py for `--device cuda` / `--device cpu`.
"""
import collections
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from onnx_real_models import randomize_bn  # noqa: E402  (benchmarks/: one home for it)

Built = collections.namedtuple("Built", "module inputs outputs")
Spec = collections.namedtuple("Spec", "build gpu_batches cpu_batches small what")


class Tupled(nn.Module):
    """A model whose output is a dict, a ModelOutput or an OrderedDict, as a tuple of tensors
    (the keys in `keys`, in that order; None: every value in the model's order). With `names`,
    the positional inputs are passed to the model by those keywords."""

    def __init__(self, model, keys=None, names=None):
        super().__init__()
        self.model, self.keys, self.names = model, keys, names

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args))) if self.names else self.model(*args)
        if isinstance(out, torch.Tensor):
            return out
        if self.keys is not None:
            vals = [out[k] for k in self.keys]
        else:
            vals = list(out.values())
        return vals[0] if len(vals) == 1 else tuple(vals)


def _seeded(seed=0):
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed + 1)


def _image(batch, size, gen):
    return collections.OrderedDict(input=torch.randn(batch, 3, size, size, generator=gen))


def _vision(ctor, size=224):
    """A torchvision / timm image model: module, one NCHW f32 input."""

    def build(batch):
        gen = _seeded()
        m = ctor()
        randomize_bn(m, gen)
        return Built(m.eval(), _image(batch, size, gen), ["output"])
    return build


def _tv(name, **kw):
    def ctor():
        import torchvision
        return getattr(torchvision.models, name)(weights=None, **kw)
    return ctor


def _timm(name):
    def ctor():
        import timm
        return timm.create_model(name, pretrained=False)
    return ctor


def _tokens(batch, seq, vocab, gen):
    """Token ids and an all-ones attention mask (given, so that no model takes its
    mask-free path, which may trace to ops ONNX lacks, e.g. GPT-2's aten::diff)."""
    return collections.OrderedDict(input_ids=torch.randint(0, vocab, (batch, seq), generator=gen),
                                   attention_mask=torch.ones(batch, seq, dtype=torch.int64))


def _hf(model_cls, config_cls, seq, **cfg):
    """A transformers model from a config with random weights; the output is the last hidden
    state. SDPA attention where the model has it (the fast path for PyTorch too)."""

    def build(batch):
        import transformers
        gen = _seeded()
        config = getattr(transformers, config_cls)(**cfg)
        config._attn_implementation = "sdpa"
        m = getattr(transformers, model_cls)(config)
        ins = _tokens(batch, seq, config.vocab_size, gen)
        return Built(Tupled(m.eval(), ["last_hidden_state"], list(ins)).eval(), ins, ["last_hidden_state"])
    return build


def _bert(layers, hidden, heads, seq=128):
    return _hf("BertModel", "BertConfig", seq, num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
               intermediate_size=4 * hidden)


def _llama(layers, hidden, heads, kv_heads, inter, vocab, seq=128):
    return _hf("LlamaModel", "LlamaConfig", seq, num_hidden_layers=layers, hidden_size=hidden,
               num_attention_heads=heads, num_key_value_heads=kv_heads, intermediate_size=inter, vocab_size=vocab,
               max_position_embeddings=2048, use_cache=False)


def _wav2vec2(batch):
    import transformers
    gen = _seeded()
    config = transformers.Wav2Vec2Config()  # base: 7 conv feature layers, 12 encoder layers of 768
    config._attn_implementation = "sdpa"
    m = transformers.Wav2Vec2Model(config).eval()
    ins = collections.OrderedDict(input_values=torch.randn(batch, 16000, generator=gen))
    return Built(Tupled(m, ["last_hidden_state"]).eval(), ins, ["last_hidden_state"])


def _fpn_backbone(batch):
    """RetinaNet / Faster R-CNN's backbone: ResNet-50 with a feature pyramid (5 maps)."""
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    gen = _seeded()
    m = resnet_fpn_backbone(backbone_name="resnet50", weights=None, trainable_layers=5)
    randomize_bn(m, gen)
    return Built(Tupled(m.eval()).eval(), _image(batch, 512, gen), ["p2", "p3", "p4", "p5", "pool"])


def _lraspp(batch):
    import torchvision
    gen = _seeded()
    m = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    randomize_bn(m, gen)
    return Built(Tupled(m.eval(), ["out"]).eval(), _image(batch, 512, gen), ["out"])


MODELS = collections.OrderedDict([
    # name: Spec(builder, GPU batches, CPU batches, small (CPU-sized, #39), what)
    ("resnet50", Spec(_vision(_tv("resnet50")), (1, 32), (1, 8), False, "torchvision ResNet-50, 224x224")),
    ("mobilenet_v3_small", Spec(_vision(_tv("mobilenet_v3_small")), (1, 64), (1, 8), True,
                                "torchvision MobileNetV3-Small, 224x224")),
    ("convnext_tiny", Spec(_vision(_tv("convnext_tiny")), (1, 32), (1, 8), False, "torchvision ConvNeXt-T, 224x224")),
    ("efficientnet_b0", Spec(_vision(_tv("efficientnet_b0")), (1, 32), (1, 8), True,
                             "torchvision EfficientNet-B0, 224x224")),
    ("vit_small", Spec(_vision(_timm("vit_small_patch16_224")), (1, 32), (1, 8), False, "timm ViT-S/16, 224x224")),
    ("swin_tiny", Spec(_vision(_timm("swin_tiny_patch4_window7_224")), (1, 32), (1, 8), False,
                       "timm Swin-T, window 7, 224x224")),
    ("bert_base", Spec(_bert(12, 768, 12), (1, 16), (1, 8), False, "transformers BertModel, base config, seq 128")),
    ("gpt2_6l", Spec(_hf("GPT2Model", "GPT2Config", 128, n_layer=6, use_cache=False), (1, 16), (1, 8), False,
                     "transformers GPT2Model, 6 layers of 768, seq 128")),
    ("llama_4l", Spec(_llama(4, 1024, 16, 4, 2816, 32000), (1, 16), (1, 8), False,
                      "transformers LlamaModel, 4 layers of 1024, 16 heads, 4 KV heads (GQA), seq 128")),
    ("t5_encoder", Spec(_hf("T5EncoderModel", "T5Config", 128, d_model=512, d_kv=64, d_ff=2048, num_layers=6,
                            num_heads=8, vocab_size=32128), (1, 16), (1, 8), False,
                        "transformers T5EncoderModel, t5-small config (6 layers of 512), seq 128")),
    ("wav2vec2", Spec(_wav2vec2, (1, 8), (1, 4), False, "transformers Wav2Vec2Model, base config, 1 s at 16 kHz")),
    ("fpn_backbone", Spec(_fpn_backbone, (1, 8), (1, 2), False,
                          "torchvision resnet_fpn_backbone (ResNet-50 + FPN, RetinaNet's), 512x512")),
    ("lraspp", Spec(_lraspp, (1, 8), (1, 2), False, "torchvision LR-ASPP MobileNetV3-Large segmentation, 512x512")),
    # small, CPU-sized variants (#39)
    ("bert_2l_128", Spec(_bert(2, 128, 2), (1, 64), (1, 8), True, "BertModel, 2 layers of 128, 2 heads, seq 128")),
    ("bert_4l_256", Spec(_bert(4, 256, 4), (1, 64), (1, 8), True, "BertModel, 4 layers of 256, 4 heads, seq 128")),
    ("llama_2l", Spec(_llama(2, 256, 8, 2, 688, 8000), (1, 64), (1, 8), True,
                      "LlamaModel, 2 layers of 256, 8 heads, 2 KV heads (GQA), seq 128")),
])


def gpu_models():
    return list(MODELS)


def cpu_models():
    return [n for n, s in MODELS.items() if s.small]


def build(name, batch):
    """The Built of model `name` at batch size `batch` (KeyError for an unknown name)."""
    return MODELS[name].build(batch)
