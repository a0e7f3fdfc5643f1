"""The compiler's intermediate representation."""
from .instruction import BUILTINS, LITERAL, PARAM, RETURN, Instruction
from .module import Module
from .program import Program, ValidationError
from .shape import Shape, TupleShape

__all__ = ["Shape", "TupleShape", "Instruction", "Module", "Program", "ValidationError",
           "PARAM", "LITERAL", "RETURN", "BUILTINS"]
