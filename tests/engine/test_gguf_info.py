"""A model's facts come from its GGUF header: real files written by gguf.GGUFWriter,
the real SmolLM2 GGUF, and files cut short or damaged the way downloads and disks do."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.llama.llama_process import LlamaNotInstalled, find_model_file
from gguf import LlamaFileType
from gguf_samples import PLAIN_TEMPLATE, SampleModel, parameter_count, write_gguf
from tier_policy import part_missing

from desktop_agent.engine.chat_template import template_supports_tools
from desktop_agent.engine.errors import (
    CorruptModelError,
    MissingSplitPartError,
    NotGgufError,
    TruncatedModelError,
)
from desktop_agent.engine.gguf_info import (
    ModelInfo,
    is_later_split_part,
    read_model_info,
    size_label,
    split_parts,
)


@pytest.fixture
def smollm2() -> Path:
    try:
        return find_model_file()
    except LlamaNotInstalled as missing:
        part_missing(str(missing))


def test_the_real_smollm2_reads_as_llama_cpp_sees_it(smollm2: Path) -> None:
    info = read_model_info(smollm2)

    assert info.architecture == "llama"
    assert info.size_label == "135M"
    assert info.quantization == "Q4_1"
    assert info.context_length == 8192
    assert (info.layer_count, info.head_count, info.head_count_kv) == (30, 9, 3)
    # llama.cpp logs "KV self size = 180.00 MiB" for this model at -c 8192 (f16 cache).
    assert info.kv_cache_bytes(8192) == 180 * 1024 * 1024
    assert info.size_bytes == smollm2.stat().st_size
    assert 130_000_000 < info.parameter_count < 140_000_000
    # Its own template ignores tools: the e2e tier serves it with hermes_tools.jinja.
    assert info.chat_template and not info.supports_tools


def test_a_written_model_reads_back_with_every_field(tmp_path: Path) -> None:
    model = SampleModel(name="Qwen3 1.7B", size_label="1.7B", context_length=40960,
                        layers=3, embedding=128, heads=8, kv_heads=4)
    info = read_model_info(write_gguf(tmp_path / "qwen3.gguf", model))

    assert info.name == "Qwen3 1.7B"
    assert info.size_label == "1.7B"
    assert info.quantization == "Q4_K_M"
    assert info.context_length == 40960
    assert (info.layer_count, info.embedding_length, info.head_count,
            info.head_count_kv) == (3, 128, 8, 4)
    # 3 layers x 4 kv heads x (16 key + 16 value) x 2 bytes
    assert info.kv_bytes_per_token == 3 * 4 * 32 * 2
    assert info.parameter_count == parameter_count(model)
    assert info.supports_tools
    assert info.parts == (tmp_path / "qwen3.gguf",)


def test_the_vocabulary_is_stepped_over_and_what_follows_it_is_read(tmp_path: Path) -> None:
    info = read_model_info(write_gguf(tmp_path / "big-vocab.gguf", SampleModel(vocabulary=20_000)))

    assert info.supports_tools, "the chat template is written after the 20,000 tokens"


def test_without_a_size_label_the_parameters_are_counted_from_the_tensors(
        tmp_path: Path) -> None:
    model = SampleModel(size_label=None, vocabulary=10_000, embedding=256, layers=4)
    info = read_model_info(write_gguf(tmp_path / "unlabelled.gguf", model))

    assert info.parameter_count == 10_000 * 256 + 4 * 256 * 256 + 256
    assert info.size_label == "2.8M"


def test_without_a_file_type_the_quantisation_is_the_tensor_type_holding_most_bytes(
        tmp_path: Path) -> None:
    info = read_model_info(write_gguf(tmp_path / "untyped.gguf", SampleModel(file_type=None)))

    assert info.quantization == "F16"  # the f16 attention weights outweigh the f32 rest


def test_per_layer_key_value_heads_are_summed_layer_by_layer(tmp_path: Path) -> None:
    info = read_model_info(write_gguf(tmp_path / "varying.gguf",
                                      SampleModel(layers=3, kv_heads=[1, 2, 4])))

    assert info.head_count_kv == 4
    assert info.kv_bytes_per_token == (1 + 2 + 4) * (16 + 16) * 2


def test_a_template_that_only_says_tool_in_its_text_offers_no_tools(tmp_path: Path) -> None:
    info = read_model_info(write_gguf(tmp_path / "plain.gguf",
                                      SampleModel(chat_template=PLAIN_TEMPLATE)))

    assert not info.supports_tools


def test_a_named_tool_use_template_counts(tmp_path: Path) -> None:
    tool_use = "{% if tools %}{{ tools | tojson }}{% endif %}"
    model = SampleModel(chat_template=PLAIN_TEMPLATE,
                        extra_strings=(("tokenizer.chat_template.tool_use", tool_use),))
    info = read_model_info(write_gguf(tmp_path / "hermes.gguf", model))

    assert info.tool_template == tool_use
    assert info.supports_tools


@pytest.mark.parametrize(("template", "offers"), [
    ("{%- if tools is defined and tools %}x{% endif %}", True),
    ("{{ message.tool_calls[0].function.name }}", True),
    ("{% for m in messages %}{{ m.content }}{% endfor %} Use tools wisely.", False),
    ("{% if message.role == 'tool' %}{{ m.content }}{% endif %}", False),
    ("", False),
])
def test_tool_support_is_read_from_the_template_code(template: str, offers: bool) -> None:
    assert template_supports_tools(template) is offers


def test_a_split_model_is_one_model_with_the_size_of_its_parts(tmp_path: Path) -> None:
    model = SampleModel(layers=4)
    write_gguf(tmp_path / "big.gguf", model, split_max_tensors=2)
    parts = sorted(tmp_path.glob("big-*.gguf"))
    assert [p.name for p in parts] == ["big-00001-of-00003.gguf", "big-00002-of-00003.gguf",
                                       "big-00003-of-00003.gguf"]

    info = read_model_info(parts[0])

    assert info.parts == tuple(parts)
    assert info.path == parts[0]
    assert info.size_bytes == sum(p.stat().st_size for p in parts)
    assert info.parameter_count == parameter_count(model)
    assert info.name == "Sample Model"
    assert split_parts(parts[2]) == tuple(parts)
    assert [is_later_split_part(p) for p in parts] == [False, True, True]


def test_a_split_model_missing_a_part_names_the_missing_file(tmp_path: Path) -> None:
    write_gguf(tmp_path / "big.gguf", SampleModel(layers=4), split_max_tensors=2)
    (tmp_path / "big-00002-of-00003.gguf").unlink()

    with pytest.raises(MissingSplitPartError, match=r"big-00002-of-00003\.gguf is not next to it"):
        read_model_info(tmp_path / "big-00001-of-00003.gguf")


def test_a_file_cut_in_its_weights_is_reported_as_incomplete(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "cut.gguf")
    full = path.stat().st_size
    with path.open("r+b") as file:
        file.truncate(full - 100)

    with pytest.raises(TruncatedModelError) as caught:
        read_model_info(path)

    assert str(caught.value) == (f"cut.gguf is incomplete: it has {full - 100:,} of its "
                                 f"{full:,} bytes (an unfinished download?). Download it again.")
    assert caught.value.path == path


def test_a_file_cut_in_its_header_is_reported_as_truncated(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "header-cut.gguf", SampleModel(vocabulary=5000))
    with path.open("r+b") as file:
        file.truncate(2000)

    with pytest.raises(TruncatedModelError,
                       match=r"header-cut.gguf is incomplete: its 2,000 bytes end inside its"):
        read_model_info(path)


def test_a_damaged_value_type_is_reported_as_damaged(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "damaged.gguf")
    data = bytearray(path.read_bytes())
    key = b"general.architecture"
    type_at = data.index(key) + len(key)
    data[type_at:type_at + 4] = (99).to_bytes(4, "little")
    path.write_bytes(bytes(data))

    with pytest.raises(CorruptModelError, match=r"damaged.gguf is damaged: value type 99"):
        read_model_info(path)


@pytest.mark.parametrize("content", [b"", b"GG", b"<html>Not found</html>" * 10])
def test_a_file_that_is_not_gguf_says_so(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(content)

    with pytest.raises(NotGgufError, match=r"^model.gguf is not a GGUF model file"):
        read_model_info(path)


def test_info_survives_its_json_round_trip(tmp_path: Path) -> None:
    info = read_model_info(write_gguf(tmp_path / "a.gguf"))

    assert ModelInfo.from_json(info.to_json()) == info


@pytest.mark.parametrize(("parameters", "label"), [
    (134_515_008, "135M"), (1_720_000_000, "1.7B"), (7_615_616_512, "7.6B"),
    (2_000_000_000, "2B"), (27_000_000_000, "27B"), (0, None),
])
def test_parameter_counts_read_as_model_pages_write_them(parameters: int,
                                                         label: str | None) -> None:
    assert size_label(parameters) == label


def test_file_type_names_are_llama_cpp_s(tmp_path: Path) -> None:
    info = read_model_info(write_gguf(tmp_path / "q8.gguf",
                                      SampleModel(file_type=LlamaFileType.MOSTLY_Q8_0)))

    assert info.quantization == "Q8_0"
