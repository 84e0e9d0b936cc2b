"""Pickles that carry TorchScript's type tags, without torch: TorchScript's pickler
(what PyTorch's C++ side writes, the NCCL flight recorder's dump among it) wraps every
list and dict it writes in torch.jit._pickle.restore_type_tag(value, type)."""
import sys
import types


def restore_type_tag(value, type_str):
    """What TorchScript's pickles call on every list and dict they hold."""
    return value


# Pickled under TorchScript's name for it, which pickle checks by importing it.
for _name in ("torch", "torch.jit", "torch.jit._pickle"):
    sys.modules.setdefault(_name, types.ModuleType(_name))
restore_type_tag.__module__ = "torch.jit._pickle"
sys.modules["torch.jit._pickle"].restore_type_tag = restore_type_tag


class Tagged:
    def __init__(self, value, type_str):
        self.value, self.type_str = value, type_str

    def __reduce__(self):
        return restore_type_tag, (self.value, self.type_str)


def tagged(value):
    """`value` with every list and dict in it tagged as TorchScript tags them."""
    if isinstance(value, dict):
        return Tagged({k: tagged(v) for k, v in value.items()}, "Dict[str, Any]")
    if isinstance(value, list):
        return Tagged([tagged(v) for v in value], "List[Any]")
    if isinstance(value, tuple):
        return tuple(tagged(v) for v in value)
    return value
