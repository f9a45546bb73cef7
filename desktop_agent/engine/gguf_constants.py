"""GGUF's numbers, as llama.cpp's own ``gguf`` package defines them, without importing it.

``import gguf`` loads numpy (its reader and writer work on arrays), which the
one-file binary would then carry and every first header read would wait for, while
the engine only needs a few tables to walk a header: the value types, the tensor
types with their block sizes, the file types and the magic. They are copied here from gguf 0.19.0;
``tests/engine/test_gguf_constants.py`` checks them against the installed package,
so a newer ``gguf`` with new types fails the test instead of drifting silently.
"""

from __future__ import annotations

import enum

GGUF_MAGIC = 1179993927
"""``GGUF`` read as a little-endian 32-bit number."""
GGUF_DEFAULT_ALIGNMENT = 32


class ValueType(enum.IntEnum):
    """A metadata value's type (``GGUFValueType``)."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


class TensorType(enum.IntEnum):
    """A tensor's type (``GGMLQuantizationType``)."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39
    NVFP4 = 40
    Q1_0 = 41


#: Elements per block and bytes per block of each tensor type (``GGML_QUANT_SIZES``).
QUANT_SIZES: dict[TensorType, tuple[int, int]] = {
    TensorType.F32: (1, 4),
    TensorType.F16: (1, 2),
    TensorType.Q4_0: (32, 18),
    TensorType.Q4_1: (32, 20),
    TensorType.Q5_0: (32, 22),
    TensorType.Q5_1: (32, 24),
    TensorType.Q8_0: (32, 34),
    TensorType.Q8_1: (32, 40),
    TensorType.Q2_K: (256, 84),
    TensorType.Q3_K: (256, 110),
    TensorType.Q4_K: (256, 144),
    TensorType.Q5_K: (256, 176),
    TensorType.Q6_K: (256, 210),
    TensorType.Q8_K: (256, 292),
    TensorType.IQ2_XXS: (256, 66),
    TensorType.IQ2_XS: (256, 74),
    TensorType.IQ3_XXS: (256, 98),
    TensorType.IQ1_S: (256, 50),
    TensorType.IQ4_NL: (32, 18),
    TensorType.IQ3_S: (256, 110),
    TensorType.IQ2_S: (256, 82),
    TensorType.IQ4_XS: (256, 136),
    TensorType.I8: (1, 1),
    TensorType.I16: (1, 2),
    TensorType.I32: (1, 4),
    TensorType.I64: (1, 8),
    TensorType.F64: (1, 8),
    TensorType.IQ1_M: (256, 56),
    TensorType.BF16: (1, 2),
    TensorType.TQ1_0: (256, 54),
    TensorType.TQ2_0: (256, 66),
    TensorType.MXFP4: (32, 17),
    TensorType.NVFP4: (64, 36),
    TensorType.Q1_0: (128, 18),
}


class FileType(enum.IntEnum):
    """The file's main quantisation (``general.file_type``, ``LlamaFileType``)."""

    ALL_F32 = 0
    MOSTLY_F16 = 1
    MOSTLY_Q4_0 = 2
    MOSTLY_Q4_1 = 3
    MOSTLY_Q8_0 = 7
    MOSTLY_Q5_0 = 8
    MOSTLY_Q5_1 = 9
    MOSTLY_Q2_K = 10
    MOSTLY_Q3_K_S = 11
    MOSTLY_Q3_K_M = 12
    MOSTLY_Q3_K_L = 13
    MOSTLY_Q4_K_S = 14
    MOSTLY_Q4_K_M = 15
    MOSTLY_Q5_K_S = 16
    MOSTLY_Q5_K_M = 17
    MOSTLY_Q6_K = 18
    MOSTLY_IQ2_XXS = 19
    MOSTLY_IQ2_XS = 20
    MOSTLY_Q2_K_S = 21
    MOSTLY_IQ3_XS = 22
    MOSTLY_IQ3_XXS = 23
    MOSTLY_IQ1_S = 24
    MOSTLY_IQ4_NL = 25
    MOSTLY_IQ3_S = 26
    MOSTLY_IQ3_M = 27
    MOSTLY_IQ2_S = 28
    MOSTLY_IQ2_M = 29
    MOSTLY_IQ4_XS = 30
    MOSTLY_IQ1_M = 31
    MOSTLY_BF16 = 32
    MOSTLY_TQ1_0 = 36
    MOSTLY_TQ2_0 = 37
    MOSTLY_MXFP4_MOE = 38
    MOSTLY_NVFP4 = 39
    MOSTLY_Q1_0 = 40
    GUESSED = 1024
