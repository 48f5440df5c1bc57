"""std::mt19937_64 and the runtime's per-epoch sample order, in Python.

The training data loader (include/heterps/Runtime/Data/BatchLoader.h) orders
the samples of epoch e by a Fisher-Yates shuffle driven by a std::mt19937_64
seeded with seed + 0x9E3779B97F4A7C15 * (e + 1), taking rng() % i for the
swap partner. This module reproduces it, so that a PyTorch reference run
sees the batches in the same order.
"""

MASK = (1 << 64) - 1


class MT19937_64:
    """The 64-bit Mersenne Twister of the C++ standard ([rand.eng.mers])."""

    N, M = 312, 156
    MATRIX_A = 0xB5026F5AA96619E9
    UPPER, LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed):
        self.mt = [0] * self.N
        self.mt[0] = seed & MASK
        for i in range(1, self.N):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK
        self.index = self.N

    def _twist(self):
        mt = self.mt
        for i in range(self.N):
            x = (mt[i] & self.UPPER) | (mt[(i + 1) % self.N] & self.LOWER)
            xa = x >> 1
            if x & 1:
                xa ^= self.MATRIX_A
            mt[i] = mt[(i + self.M) % self.N] ^ xa
        self.index = 0

    def __call__(self):
        if self.index >= self.N:
            self._twist()
        x = self.mt[self.index]
        self.index += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & MASK


def epoch_order(n, seed, epoch):
    """The BatchLoader's sample order of `epoch` over `n` samples."""
    rng = MT19937_64((seed + 0x9E3779B97F4A7C15 * (epoch + 1)) & MASK)
    order = list(range(n))
    for i in range(n, 1, -1):
        j = rng() % i
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


if __name__ == "__main__":
    # The standard's check: the 10000th output of a default-seeded engine.
    rng = MT19937_64(5489)
    for _ in range(9999):
        rng()
    assert rng() == 9981545732273789042
    print("mt19937_64 ok; epoch_order(10, 1, 0) =", epoch_order(10, 1, 0))
