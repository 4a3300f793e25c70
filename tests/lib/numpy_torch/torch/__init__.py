"""tests/lib/numpy_torch/torch: a numpy stand-in for the few torch calls of tools/llama_ref.py's
reference path (load, generate, write_logits) and of its timed step (Static, check_static), so
that tests/gguf.sh runs that code where torch is not installed (PYTHONPATH=tests/lib/numpy_torch). It follows torch's semantics for these calls only;
where torch is installed the test uses the real one."""

import contextlib
import numpy as np

float32, float64, float16, int8, uint8, int64 = (np.dtype(x) for x in ("<f4", "<f8", "<f2", "i1", "u1", "<i8"))
long = int64
bfloat16 = "bfloat16 (not in this stand-in)"
__version__ = "numpy stand-in"


class device(str):
	type = property(lambda self: str(self))


class _Cuda:
	@staticmethod
	def is_available():
		return False


cuda = _Cuda()


def _a(x):
	return x.a if isinstance(x, Tensor) else x


class Tensor:
	def __init__(self, a):
		self.a = np.asarray(a)
		self.device = device("cpu")

	# shapes and dtypes
	def view(self, *s):
		if len(s) == 1 and isinstance(s[0], np.dtype):
			return Tensor(self.a.view(s[0]))
		if not self.a.flags.c_contiguous:
			raise RuntimeError("view of a non-contiguous tensor")
		return Tensor(self.a.reshape(s))

	def reshape(self, *s):
		return Tensor(self.a.reshape(s[0] if len(s) == 1 and isinstance(s[0], (list, tuple)) else s))

	def contiguous(self):
		return Tensor(np.ascontiguousarray(self.a))

	def clone(self):
		return Tensor(self.a.copy())

	def float(self):
		return Tensor(self.a.astype(float32))

	def to(self, *args, **kw):
		for x in list(args) + list(kw.values()):
			if isinstance(x, np.dtype):
				return Tensor(self.a.astype(x))
		return self

	def detach(self):
		return self

	def flatten(self):
		return Tensor(self.a.reshape(-1))

	def tolist(self):
		return self.a.tolist()

	def mean(self, dim=None, keepdim=False):
		return Tensor(self.a.mean(axis=dim, keepdims=keepdim, dtype=self.a.dtype))

	def index_select(self, dim, idx):
		return Tensor(np.take(self.a, _a(idx), axis=dim))

	def index_copy_(self, dim, idx, src):
		assert dim == 0
		self.a[_a(idx)] = _a(src)
		return self

	def masked_fill(self, mask, v):
		return Tensor(np.where(_a(mask), np.asarray(v, self.a.dtype), self.a))

	def zero_(self):
		self.a[...] = 0
		return self

	def fill_(self, v):
		self.a[...] = v
		return self

	def copy_(self, src):
		self.a[...] = _a(src)
		return self

	def add_(self, v):
		self.a += _a(v)
		return self

	def repeat_interleave(self, n, dim):
		return Tensor(np.repeat(self.a, n, axis=dim))

	@property
	def shape(self):
		return self.a.shape

	def __int__(self):
		return int(self.a.item())

	def __getitem__(self, k):
		return Tensor(self.a[_a(k)])

	def __setitem__(self, k, v):
		self.a[_a(k)] = _a(v)

	def _same(self, r):
		# torch keeps the tensor's dtype against a Python scalar
		return r.astype(self.a.dtype) if r.dtype != self.a.dtype and self.a.dtype.kind == "f" else r

	def __add__(self, o):
		return Tensor(self._same(self.a + _a(o)))

	__radd__ = __add__

	def __sub__(self, o):
		return Tensor(self._same(self.a - _a(o)))

	def __mul__(self, o):
		return Tensor(self._same(self.a * _a(o)))

	__rmul__ = __mul__

	def __truediv__(self, o):
		return Tensor(self._same(self.a / _a(o)))

	def __neg__(self):
		return Tensor(-self.a)

	def __rpow__(self, base):
		return Tensor(np.power(base, self.a))

	def __le__(self, o):
		return Tensor(self.a <= _a(o))

	def __invert__(self):
		return Tensor(~self.a)

	def __matmul__(self, o):
		return Tensor(self.a @ _a(o))

	def __and__(self, o):
		return Tensor(self.a & _a(o))

	def __rshift__(self, o):
		return Tensor(self.a >> _a(o))


def frombuffer(buf, dtype):
	return Tensor(np.frombuffer(buf, dtype=dtype).copy())


def tensor(x, dtype=None):
	return Tensor(np.asarray(x, dtype=dtype))


def zeros(*shape, dtype=None, device=None):
	return Tensor(np.zeros(shape, dtype=dtype or float32))


def arange(n, dtype=None, device=None):
	return Tensor(np.arange(n, dtype=dtype or int64))


def cat(ts, dim=0):
	return Tensor(np.concatenate([_a(t) for t in ts], axis=dim))


def stack(ts, dim=0):
	return Tensor(np.stack([_a(t) for t in ts], axis=dim))


def pow(x, y):
	return Tensor(np.power(_a(x), _a(y)))


def cos(x):
	return Tensor(np.cos(_a(x)))


def sin(x):
	return Tensor(np.sin(_a(x)))


def rsqrt(x):
	a = _a(x)
	return Tensor((1 / np.sqrt(a)).astype(a.dtype))


def einsum(eq, *ts):
	return Tensor(np.einsum(eq, *[_a(t) for t in ts]))


def softmax(x, dim):
	a = _a(x)
	e = np.exp(a - a.max(axis=dim, keepdims=True))
	return Tensor(e / e.sum(axis=dim, keepdims=True))


def argmax(x, dim=None):
	return Tensor(np.argmax(_a(x), axis=dim))


def no_grad():
	return contextlib.nullcontext()


class _F:
	@staticmethod
	def silu(x):
		a = _a(x)
		return Tensor(a / (1 + np.exp(-a)))

	@staticmethod
	def linear(x, w):
		return Tensor(_a(x) @ _a(w).T)


class nn:
	functional = _F
