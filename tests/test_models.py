"""Table tests for the model catalog (scalemath/models.toml), its loader, and config.json reading.

Every expected figure is written out here: shapes are the public Hugging Face config.json values
(GPT-3's are from its paper), and the parameter totals are the ones the book or the model's
authors print; nothing outside the project is read.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap

import pytest

from scalemath.errors import CatalogError, UnknownNameError
from scalemath.catalog.hf_config import MAX_CONFIG_BYTES, model_from_hf_config
from scalemath.catalog.models import SYMBOL_FIELDS, Model, default_models, get_model, load_models

# -- 1. the catalog loads ------------------------------------------------------------

MODEL_KEYS = ["gpt3-175b", "gpt3-175b-exact", "llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b",
              "llama3-405b", "gemma-27b", "mixtral-8x7b", "deepseek-v3", "book-part7",
              "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "llama3.2-1b", "llama3.2-3b", "llama4-scout",
              "llama4-maverick", "gemma2-27b", "gemma2-9b", "gemma3-27b", "mixtral-8x22b", "mistral-7b",
              "qwen2.5-7b", "qwen2.5-72b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-20b",
              "gpt-oss-120b", "megatron-gpt-1.7b", "megatron-gpt-3.6b", "megatron-gpt-7.5b", "megatron-gpt-18.4b",
              "megatron-gpt-39.1b", "megatron-gpt-76.1b", "megatron-gpt-145.6b", "megatron-gpt-310.1b",
              "megatron-gpt-529.6b", "megatron-gpt-1t",
              "megatron-core-gpt-1.7b", "megatron-core-gpt-7.1b", "megatron-core-gpt-16b", "megatron-core-gpt-32b",
              "megatron-core-gpt-70b", "megatron-core-gpt-119b", "megatron-core-gpt-177b", "megatron-core-gpt-314b",
              "megatron-core-gpt-462b"]


def test_catalog_loads_every_model():
    catalog = default_models()
    assert sorted(m.key for m in catalog) == sorted(MODEL_KEYS)
    assert len(catalog) == len(MODEL_KEYS)
    for m in catalog:
        assert m.source.strip() and m.name.strip()
        assert m.problems() == []


def test_load_models_from_the_packaged_file_path_is_the_same():
    from importlib import resources

    path = resources.files("scalemath.catalog").joinpath("models.toml")
    assert {m.key: m for m in load_models(str(path))} == {m.key: m for m in default_models()}


def test_symbol_fields_name_real_fields():
    names = {f.name for f in dataclasses.fields(Model)}
    assert set(SYMBOL_FIELDS.values()) <= names
    assert SYMBOL_FIELDS["V_vocab"] == "V"


# -- 2. shapes against the public numbers ----------------------------------------------

#  key                      D      F      N    K    H    L     V       E    k  gated  tied   max_context
SHAPES = [
    ("gpt3-175b",        12288, 49152,  96,  96, 128,  96,  50257,   1, 1, False, True,  2048),
    ("llama2-7b",         4096, 11008,  32,  32, 128,  32,  32000,   1, 1, True,  False, 4096),
    ("llama2-13b",        5120, 13824,  40,  40, 128,  40,  32000,   1, 1, True,  False, 4096),
    ("llama2-70b",        8192, 28672,  64,   8, 128,  80,  32000,   1, 1, True,  False, 4096),
    ("llama3-8b",         4096, 14336,  32,   8, 128,  32, 128256,   1, 1, True,  False, 8192),
    ("llama3-70b",        8192, 28672,  64,   8, 128,  80, 128256,   1, 1, True,  False, 8192),
    ("llama3-405b",      16384, 53248, 128,   8, 128, 126, 128256,   1, 1, True,  False, 131072),
    ("gemma-27b",         4608, 36864,  32,  16, 128,  46, 256000,   1, 1, True,  True,  8192),
    ("mixtral-8x7b",      4096, 14336,  32,   8, 128,  32,  32000,   8, 2, True,  False, 32768),
    ("deepseek-v3",       7168,  2048, 128, 128, 128,  61, 129280, 256, 8, True,  False, 163840),
    ("book-part7", 4096, 16384, 32, 8, 256, 64, 32128, 1, 1, True, True, None),
]


@pytest.mark.parametrize("key, D, F, N, K, H, L, V, E, k, gated, tied, max_context", SHAPES,
                         ids=[row[0] for row in SHAPES])
def test_shape(key, D, F, N, K, H, L, V, E, k, gated, tied, max_context):
    m = get_model(key)
    assert (m.D, m.F, m.N, m.K, m.H, m.L, m.V) == (D, F, N, K, H, L, V)
    assert (m.E, m.k, m.gated, m.tied, m.max_context) == (E, k, gated, tied, max_context)
    assert m.is_moe == (E > 1)


def test_deepseek_v3_moe_and_latent_attention():
    m = get_model("deepseek-v3")
    assert (m.dense_layers, m.F_dense, m.shared_experts, m.F_shared) == (3, 18432, 1, None)
    assert m.moe_layers == 58
    assert (m.kv_lora_rank, m.q_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim) == (512, 1536, 64, 128)
    assert m.is_mla
    assert m.E // m.k == 32  # the book's sparsity for DeepSeek-V3 (part 4 § MoE)


def test_gemma_local_attention():
    m = get_model("gemma-27b")
    assert (m.sliding_window, m.local_layers) == (4096, 23)
    assert m.N * m.H == 4096 != m.D


def test_case_insensitive_lookup():
    assert get_model("LLaMA3-70B") is get_model("llama3-70b")


# -- 3. parameter counts and KV cache ---------------------------------------------------

#  key, total params (public or the book's), active params, relative tolerance
PARAMS = [
    ("llama3-70b", 70_553_698_304, None, 0),      # the book's exact count (part 6 / part 8)
    ("llama2-13b", 13_015_859_200, None, 0),      # L(3DF + 4DNH + 2D) + 2VD, the book's "13.0e9"
    ("llama2-7b", 6.74e9, None, 0.002),
    ("llama2-70b", 68.98e9, None, 0.002),
    ("llama3-8b", 8.03e9, None, 0.002),
    ("llama3-405b", 405.85e9, None, 0.001),       # part 6 worked problem 2a
    ("gemma-27b", 27.2e9, None, 0.005),
    ("gpt3-175b", 175e9, None, 0.005),
    ("mixtral-8x7b", 46.7e9, 12.9e9, 0.002),      # Mixtral paper: 47B total, 13B active
    ("deepseek-v3", 671e9, 37e9, 0.02),           # DeepSeek-V3 report: 671B total, 37B activated
    ("book-part7", 18.4e9, None, 0.002),  # part 7 worked problem 1
]


@pytest.mark.parametrize("key, total, active, rel", PARAMS, ids=[row[0] for row in PARAMS])
def test_param_count(key, total, active, rel):
    m = get_model(key)
    assert m.param_count() == pytest.approx(total, rel=rel)
    assert m.param_count(active=True) == pytest.approx(active or total, rel=rel)


def test_book_param_formula_for_dense_models():
    # P4-15: P = L·(3DF + 2D(N+K)H + 2D) + 2DV (DV when tied)
    for key in ("llama2-7b", "llama3-8b", "llama3-405b", "book-part7"):
        m = get_model(key)
        P = m.L * (3 * m.D * m.F + 2 * m.D * (m.N + m.K) * m.H + 2 * m.D) + (1 if m.tied else 2) * m.D * m.V
        assert m.param_count() == P


def test_moe_params_are_3EDF_per_layer_plus_router():
    m = get_model("mixtral-8x7b")
    assert m.mlp_params_per_layer() == 3 * m.E * m.D * m.F + m.E * m.D
    assert m.mlp_params_per_layer(active=True) == 3 * m.k * m.D * m.F + m.E * m.D


#  key, KV elements per token (all layers), where the figure comes from
KV = [
    ("llama3-70b", 2 * 80 * 8 * 128),   # 163,840: part 8, "2·K·H·L" = 160 kB per token in int8
    ("llama2-13b", 2 * 40 * 40 * 128),  # part 7: 8192 tokens in bf16 = 6.7 GB
    ("book-part7", 2 * 64 * 8 * 256),  # part 7 worked problem 2: 262 kB in int8
    ("mixtral-8x7b", 2 * 32 * 8 * 128),
    ("deepseek-v3", 61 * (512 + 64)),   # latent attention caches 576 elements per layer
]


@pytest.mark.parametrize("key, per_token", KV, ids=[row[0] for row in KV])
def test_kv_elements_per_token(key, per_token):
    assert get_model(key).kv_elements_per_token() == per_token


def test_kv_cache_of_a_sequence():
    assert get_model("llama2-13b").kv_elements(8192) * 2 == 6_710_886_400  # bf16 bytes, "6.7 GB"
    gemma = get_model("gemma-27b")
    assert gemma.kv_elements(1000) == 1000 * gemma.kv_elements_per_token()  # inside the window
    assert gemma.kv_elements(8192) == 2 * 16 * 128 * (23 * 8192 + 23 * 4096)
    with pytest.raises(ValueError):
        gemma.kv_elements(-1)


# -- 4. malformed catalog files -------------------------------------------------------

GOOD = """
[models.m]
name = "M"
source = "test"
D = 64
F = 256
N = 4
K = 2
H = 16
L = 2
V = 100
"""

BAD_CATALOGS = [
    ("not toml", "[models.m\nD = 1", "not valid TOML"),
    ("empty", "", "no [models.NAME] tables"),
    ("models not a table", "models = 3", "no [models.NAME] tables"),
    ("model not a table", "[models]\nm = 3", "must be a table"),
    ("unknown key", GOOD + "Q = 1\n", "unknown key 'Q'"),
    ("string size", GOOD.replace("D = 64", 'D = "64"'), "key 'D' = '64' has the wrong type"),
    ("zero size", GOOD.replace("L = 2", "L = 0"), "must be a positive integer"),
    ("negative size", GOOD.replace("V = 100", "V = -100"), "must be a positive integer"),
    ("float size", GOOD.replace("F = 256", "F = 256.0"), "must be a positive integer"),
    ("bool size", GOOD.replace("H = 16", "H = true"), "must be a positive integer"),
    ("flag not bool", GOOD + "gated = 1\n", "must be true or false"),
    ("empty name", GOOD.replace('name = "M"', 'name = " "'), "must be a non-empty string"),
    ("missing F", GOOD.replace("F = 256\n", ""), "lacks F"),
    ("missing source", GOOD.replace('source = "test"\n', ""), "lacks source"),
    ("K does not divide N", GOOD.replace("K = 2", "K = 3"), "must divide N = 4"),
    ("k above E", GOOD + "E = 4\nk = 8\n", "exceeds E = 4"),
    ("k on a dense model", GOOD + "k = 2\n", "needs E > 1"),
    ("MoE fields on a dense model", GOOD + "dense_layers = 1\n", "describe a mixture of experts"),
    ("negative count", GOOD + "E = 4\nk = 2\ndense_layers = -1\n", "must be a non-negative integer"),
    ("all layers dense", GOOD + "E = 4\nk = 2\ndense_layers = 2\n", "leaves no MoE layer"),
    ("F_shared without shared experts", GOOD + "E = 4\nk = 2\nF_shared = 8\n", "shared_experts = 0"),
    ("latent field alone", GOOD + "q_lora_rank = 8\n", "needs kv_lora_rank"),
    ("latent without rope dim", GOOD + "kv_lora_rank = 8\n", "needs qk_rope_head_dim"),
    ("window without layers", GOOD + "sliding_window = 8\n", "needs local_layers"),
    ("layers without window", GOOD + "local_layers = 1\n", "needs sliding_window"),
    ("too many local layers", GOOD + "sliding_window = 8\nlocal_layers = 3\n", "exceeds L = 2"),
    ("bad name", GOOD.replace("[models.m]", '[models."my model"]'), "model name 'my model' is not allowed"),
    ("defined twice", GOOD + GOOD.replace("[models.m]", "[models.M]"), "defined twice"),
    ("31-digit size", GOOD.replace("V = 100", "V = " + "1" * 31), "must be an integer of at most 30 digits"),
    ("5000-digit size", GOOD.replace("V = 100", "V = " + "1" * 5000), "more than 4300 digits"),
    ("deep nesting", "a = " + "[" * 100_000, "nested too deeply"),
    ("bad key", GOOD.replace("[models.m]", '[models."m&m"]'), "model name 'm&m' is not allowed"),
    ("new flag not bool", GOOD + "qkv_bias = 1\n", "key 'qkv_bias' = 1 has the wrong type: it must be true or false"),
    ("router bias on a dense model", GOOD + "router_bias = true\n", "router_bias describe a mixture of experts"),
    ("three norms per layer", GOOD + "norms_per_layer = 3\n", "norms_per_layer = 3 must be 2"),
    ("zero norms per layer", GOOD + "norms_per_layer = 0\n", "must be a positive integer"),
    ("q/k norm with latent attention", GOOD + "kv_lora_rank = 8\nqk_rope_head_dim = 4\nqk_norm = true\n",
     "qk_norm describe query/key/value projections, which latent attention"),
]


@pytest.mark.parametrize("text, fragment", [c[1:] for c in BAD_CATALOGS], ids=[c[0] for c in BAD_CATALOGS])
def test_bad_catalog(tmp_path, text, fragment):
    path = tmp_path / "models.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_models(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


def test_good_catalog_and_missing_file(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(GOOD, encoding="utf-8")
    m = load_models(path)["m"]
    assert (m.D, m.F, m.E, m.k, m.gated, m.tied, m.max_context) == (64, 256, 1, 1, True, False, None)
    with pytest.raises(CatalogError, match="cannot read model file"):
        load_models(tmp_path / "nope.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe[models]")
    with pytest.raises(CatalogError, match="not UTF-8"):
        load_models(tmp_path / "bin.toml")


# -- 5. config.json files --------------------------------------------------------------

LLAMA3_70B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 8192,
    "initializer_range": 0.02, "intermediate_size": 28672, "max_position_embeddings": 8192,
    "model_type": "llama", "num_attention_heads": 64, "num_hidden_layers": 80,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.40.0.dev0", "use_cache": True, "vocab_size": 128256,
}

MIXTRAL = {
    "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
    "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
    "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": False,
    "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
    "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.36.0.dev0", "use_cache": True, "vocab_size": 32000,
}

DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                 "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
    "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1, "ep_size": 1,
    "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02,
    "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
    "model_type": "deepseek_v3", "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8,
    "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True,
    "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
    "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128]},
    "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                     "original_max_position_embeddings": 4096, "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "seq_aux": True,
    "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc", "torch_dtype": "bfloat16",
    "transformers_version": "4.33.1", "use_cache": True, "v_head_dim": 128, "vocab_size": 129280,
}

GEMMA2_27B = {
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid",
    "eos_token_id": 1, "final_logit_softcapping": 30.0, "head_dim": 128,
    "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 4608,
    "initializer_range": 0.02, "intermediate_size": 36864, "max_position_embeddings": 8192,
    "model_type": "gemma2", "num_attention_heads": 32, "num_hidden_layers": 46,
    "num_key_value_heads": 16, "pad_token_id": 0, "query_pre_attn_scalar": 144, "rms_norm_eps": 1e-06,
    "rope_theta": 10000.0, "sliding_window": 4096, "torch_dtype": "float32",
    "transformers_version": "4.42.0.dev0", "use_cache": True, "vocab_size": 256000,
}

LLAMA31_405B = {
    "architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "hidden_size": 16384,
    "intermediate_size": 53248, "max_position_embeddings": 131072, "model_type": "llama",
    "num_attention_heads": 128, "num_hidden_layers": 126, "num_key_value_heads": 8,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "vocab_size": 128256,
}

# gemma-27b counts the book's two norms per layer; the config (four norms) is gemma2-27b. DeepSeek-V3's
# config has a router score-correction bias (topk_method noaux_tc) the catalog entry leaves out.
CONFIGS = [("llama3-70b", LLAMA3_70B), ("mixtral-8x7b", MIXTRAL),
           ("deepseek-v3", {**DEEPSEEK_V3, "topk_method": "greedy"}),
           ("gemma2-27b", GEMMA2_27B), ("llama3-405b", LLAMA31_405B)]


def _write(folder, config, name="config.json"):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


@pytest.mark.parametrize("key, config", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_config_json_equals_catalog(tmp_path, key, config):
    path = _write(tmp_path / key, config)
    m = model_from_hf_config(path)
    expected = get_model(key)
    assert m.key == key and str(path) in m.source
    assert dataclasses.replace(m, name=expected.name, source=expected.source) == expected
    assert m.param_count() == expected.param_count()
    assert m.kv_elements_per_token() == expected.kv_elements_per_token()


def test_config_json_folder_name_and_key(tmp_path):
    folder = tmp_path / "My Llama_3"
    _write(folder, {**LLAMA3_70B, "_name_or_path": "meta-llama/Meta-Llama-3-70B"})
    m = model_from_hf_config(folder)  # a folder holding config.json is accepted
    assert m.key == "meta-llama-3-70b" and m.name == "meta-llama/Meta-Llama-3-70B"  # the config's own name
    _write(folder, LLAMA3_70B)
    m = model_from_hf_config(folder)
    assert m.key == "my-llama-3" and m.name == "My Llama_3"  # no name in it: the folder's


DEFAULTS = [
    # (what, config changes, field, expected)
    ("K defaults to N", {"num_key_value_heads": None}, "K", 64),
    ("K absent", {"num_key_value_heads": "<drop>"}, "K", 64),
    ("H from D/N", {"head_dim": "<drop>"}, "H", 128),
    ("explicit head_dim", {"head_dim": 64}, "H", 64),
    ("llama untied by default", {"tie_word_embeddings": "<drop>"}, "tied", False),
    ("gemma tied by default", {"model_type": "gemma", "tie_word_embeddings": "<drop>"}, "tied", True),
    ("no max context", {"max_position_embeddings": "<drop>"}, "max_context", None),
    ("gpt2 is plain whatever the activation", {"model_type": "gpt2", "hidden_act": "silu"}, "gated", False),
    ("qwen is gated", {"model_type": "qwen2", "hidden_act": "gelu"}, "gated", True),
    ("qwen2 has q/k/v biases by default", {"model_type": "qwen2", "attention_bias": "<drop>"}, "qkv_bias", True),
    ("qwen2 biases switched off", {"model_type": "qwen2", "attention_bias": False}, "qkv_bias", False),
    ("qwen2 has no o bias", {"model_type": "qwen2", "attention_bias": "<drop>"}, "o_bias", False),
    ("llama attention_bias biases q, k, v and o", {"attention_bias": True}, "o_bias", True),
    ("llama mlp_bias", {"mlp_bias": True}, "mlp_bias", True),
    ("llama has no biases by default", {"attention_bias": "<drop>"}, "qkv_bias", False),
    ("qwen3 has q/k norms", {"model_type": "qwen3"}, "qk_norm", True),
    ("gemma2 has four norms per layer", {"model_type": "gemma2", "sliding_window": 4096}, "norms_per_layer", 4),
    ("gemma2 local layers alternate", {"model_type": "gemma2", "sliding_window": 4096}, "local_layers", 40),
    ("gemma2 default window", {"model_type": "gemma2"}, "sliding_window", 4096),
    ("llama ignores a sliding_window key", {"sliding_window": 4096}, "local_layers", 0),
    ("mistral window on every layer", {"model_type": "mistral", "sliding_window": 4096}, "local_layers", 80),
    ("window switched off", {"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": False},
     "local_layers", 0),
    ("qwen2 window after max_window_layers",
     {"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": True, "max_window_layers": 60},
     "local_layers", 20),
    ("layer_types", {"sliding_window": 512,
                     "layer_types": ["sliding_attention"] * 60 + ["full_attention"] * 20}, "local_layers", 60),
    ("gemma3 pattern", {"model_type": "gemma3_text", "sliding_window": 1024, "sliding_window_pattern": 6},
     "local_layers", 80 - 13),
    ("gemma3 default pattern", {"model_type": "gemma3_text", "sliding_window": 1024}, "local_layers", 80 - 13),
    ("gemma3 default vocabulary", {"model_type": "gemma3_text", "vocab_size": "<drop>"}, "V", 262208),
    ("mistral window null", {"model_type": "mistral", "sliding_window": None}, "local_layers", 0),
    ("mistral default window", {"model_type": "mistral"}, "sliding_window", 4096),
]


@pytest.mark.parametrize("changes, field, expected", [c[1:] for c in DEFAULTS], ids=[c[0] for c in DEFAULTS])
def test_config_json_defaults_and_rules(tmp_path, changes, field, expected):
    config = {**LLAMA3_70B, **changes}
    config = {k: v for k, v in config.items() if v != "<drop>"}
    assert getattr(model_from_hf_config(_write(tmp_path / "m", config)), field) == expected


def test_config_json_other_layouts(tmp_path):
    gpt2 = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_inner": None,
            "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new"}
    m = model_from_hf_config(_write(tmp_path / "gpt2", gpt2))
    assert (m.D, m.F, m.N, m.K, m.H, m.L, m.max_context, m.gated, m.tied) == \
        (768, 3072, 12, 12, 64, 12, 1024, False, True)
    qwen_moe = {"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
                "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 151936,
                "intermediate_size": 5632, "moe_intermediate_size": 1408, "num_experts": 60,
                "num_experts_per_tok": 4, "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1,
                "mlp_only_layers": [], "sliding_window": 32768, "use_sliding_window": False}
    m = model_from_hf_config(_write(tmp_path / "qwen", qwen_moe))
    assert (m.F, m.E, m.k, m.shared_experts, m.F_shared, m.dense_layers, m.F_dense) == \
        (1408, 60, 4, 1, 5632, 0, None)
    assert m.sliding_window is None
    wrapped = {"model_type": "llava", "text_config": LLAMA3_70B, "tie_word_embeddings": False}
    assert model_from_hf_config(_write(tmp_path / "wrapped", wrapped)).D == 8192


BAD_CONFIGS = [
    # (what, file content (dict -> JSON, str -> text, bytes -> raw), message fragment)
    ("missing hidden_size", {k: v for k, v in LLAMA3_70B.items() if k != "hidden_size"},
     "config.json lacks 'hidden_size' (d_model); also looked for 'n_embd', 'n_embed', 'd_model'"),
    ("missing layers", {k: v for k, v in LLAMA3_70B.items() if k != "num_hidden_layers"},
     "lacks 'num_hidden_layers' (layers)"),
    ("missing heads", {k: v for k, v in LLAMA3_70B.items() if k != "num_attention_heads"},
     "lacks 'num_attention_heads' (query heads)"),
    ("missing vocab", {k: v for k, v in LLAMA3_70B.items() if k != "vocab_size"}, "lacks 'vocab_size'"),
    ("missing d_ff", {k: v for k, v in LLAMA3_70B.items() if k != "intermediate_size"},
     "lacks 'intermediate_size' (d_ff, the MLP width)"),
    ("null hidden_size", {**LLAMA3_70B, "hidden_size": None}, "'hidden_size' is null"),
    ("zero hidden_size", {**LLAMA3_70B, "hidden_size": 0}, "'hidden_size' = 0 must be positive"),
    ("negative layers", {**LLAMA3_70B, "num_hidden_layers": -80}, "'num_hidden_layers' = -80 must be positive"),
    ("string size", {**LLAMA3_70B, "hidden_size": "8192"}, "'hidden_size' = '8192' must be a positive integer"),
    ("float size", {**LLAMA3_70B, "intermediate_size": 28672.0}, "must be a positive integer"),
    ("bool size", {**LLAMA3_70B, "vocab_size": True}, "must be a positive integer"),
    ("zero KV heads", {**LLAMA3_70B, "num_key_value_heads": 0}, "'num_key_value_heads' = 0 must be positive"),
    ("KV heads do not divide", {**LLAMA3_70B, "num_key_value_heads": 6}, "must divide N = 64"),
    ("MoE without top-k", {k: v for k, v in MIXTRAL.items() if k != "num_experts_per_tok"},
     "lacks 'num_experts_per_tok' (experts per token)"),
    ("top-k above experts", {**MIXTRAL, "num_experts_per_tok": 9}, "exceeds E = 8"),
    ("negative dense layers", {**DEEPSEEK_V3, "first_k_dense_replace": -1}, "must be non-negative"),
    ("no MoE layer left", {**DEEPSEEK_V3, "first_k_dense_replace": 61}, "no layer is a mixture of experts"),
    ("bad mlp_only_layers", {**MIXTRAL, "model_type": "qwen3_moe", "moe_intermediate_size": 8,
                             "mlp_only_layers": [99]}, "'mlp_only_layers' must be a list of layer indices"),
    ("latent without rope dim", {k: v for k, v in DEEPSEEK_V3.items() if k != "qk_rope_head_dim"},
     "lacks 'qk_rope_head_dim'"),
    ("latent without value dim", {k: v for k, v in DEEPSEEK_V3.items() if k != "v_head_dim"},
     "lacks 'v_head_dim'"),
    ("no head_dim and D not divisible", {**LLAMA3_70B, "num_attention_heads": 48, "num_key_value_heads": 8},
     "lacks 'head_dim'"),
    ("tie flag not bool", {**LLAMA3_70B, "tie_word_embeddings": "yes"}, "must be true or false"),
    ("model_type not text", {**LLAMA3_70B, "model_type": 3}, "'model_type' = 3 must be a string"),
    ("bad layer_types", {**LLAMA3_70B, "sliding_window": 8, "layer_types": ["x"]}, "'layer_types' must be"),
    ("invalid JSON", '{"hidden_size": 8192,', "not valid JSON"),
    ("trailing garbage", '{"hidden_size": 8192} x', "not valid JSON"),
    ("NaN", '{"hidden_size": NaN}', "NaN is not a JSON number"),
    ("top level list", "[1, 2, 3]", "the top level must be a JSON object"),
    ("top level string", '"llama"', "the top level must be a JSON object"),
    ("empty file", "", "not valid JSON"),
    ("not UTF-8", b'{"hidden_size": \xff}', "not UTF-8"),
    ("deep nesting", "[" * 100_000 + "]" * 100_000, "not valid JSON"),
    ("too large", '{"pad": "' + "x" * MAX_CONFIG_BYTES + '"}', "larger than 1 MB"),
    ("Infinity", '{"hidden_size": Infinity}', "Infinity is not a JSON number"),
    ("float overflow", '{"hidden_size": 1e999}', "overflows to infinity"),
    ("5000-digit integer", '{"hidden_size": ' + "9" * 5000 + "}", "5000 digits"),
    ("31-digit size", {**LLAMA3_70B, "vocab_size": 10**30}, "at most 30 digits"),
    ("name with a newline", {**LLAMA3_70B, "_name_or_path": "a\nb"}, "one line of at most 2000 printable"),
]


@pytest.mark.parametrize("content, fragment", [c[1:] for c in BAD_CONFIGS], ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_json(tmp_path, content, fragment):
    path = tmp_path / "config.json"
    if isinstance(content, dict):
        path.write_text(json.dumps(content), encoding="utf-8")
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        model_from_hf_config(path)
    assert fragment in str(info.value)
    assert str(path) in str(info.value)


def test_missing_config_json(tmp_path):
    with pytest.raises(CatalogError, match="cannot read .*config.json: No such file"):
        model_from_hf_config(tmp_path / "config.json")
    with pytest.raises(CatalogError, match="cannot read .*config.json"):
        model_from_hf_config(tmp_path)  # a folder without one


def test_config_json_code_is_never_run(tmp_path):
    # auto_map points at Python files; they are ignored, not imported
    (tmp_path / "m" / "configuration_evil.py").parent.mkdir()
    (tmp_path / "m" / "configuration_evil.py").write_text("raise SystemExit('ran')\n")
    config = {**LLAMA3_70B, "auto_map": {"AutoConfig": "configuration_evil.EvilConfig"},
              "hidden_size": 8192}
    assert model_from_hf_config(_write(tmp_path / "m", config)).D == 8192


# -- 6. unknown names --------------------------------------------------------------------

def test_unknown_model_did_you_mean():
    with pytest.raises(UnknownNameError) as info:
        get_model("llama3-70")
    message = str(info.value)
    assert message.startswith("unknown model 'llama3-70'; did you mean")
    assert "'llama3-70b'" in message
    assert "scalemath models list" in message
    assert isinstance(info.value, LookupError)


def test_unknown_model_in_a_custom_catalog(tmp_path):
    path = tmp_path / "models.toml"
    path.write_text(GOOD, encoding="utf-8")
    with pytest.raises(UnknownNameError, match="did you mean 'm'"):
        get_model("mm", load_models(path))
