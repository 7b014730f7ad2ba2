"""OBJ inputs of the layer-limit figures in docs/benchmarks.md, byte for byte those of
tests/test_cli_limits.c (write_ring, write_stack_at).

  python3 bench/floors_obj.py ring K W out.obj   K annular sectors of W of K slots, sector i
                                                 4 wu above sector i - 1 (tile size 48)
  python3 bench/floors_obj.py stack N out.obj    N square floors 4 wu apart in tile (2, -3)
                                                 of tile size 9.6
"""
import math
import sys


def ring(path, k, w):
    cx = cz = 24.0
    r0, r1 = 12.0, 14.0
    base = 1
    with open(path, "w") as f:
        for i in range(k):
            a0 = 2 * math.pi * i / k
            a1 = 2 * math.pi * (i + w) / k
            n = int((a1 - a0) / (2 * math.pi) * 180)
            for j in range(n + 1):
                a = a0 + (a1 - a0) * j / n
                f.write("v %.4f %.1f %.4f\nv %.4f %.1f %.4f\n" % (
                    cx + r0 * math.cos(a), 4.0 * i, cz + r0 * math.sin(a),
                    cx + r1 * math.cos(a), 4.0 * i, cz + r1 * math.sin(a)))
            for j in range(n):
                p = base + 2 * j
                f.write("f %d %d %d\nf %d %d %d\n" % (p, p + 2, p + 1, p + 1, p + 2, p + 3))
            base += 2 * (n + 1)


def stack(path, nfloors, tx=2, tz=-3):
    ox, oz = tx * 9.6, tz * 9.6
    with open(path, "w") as f:
        for k in range(nfloors):
            y = 4.0 * k
            f.write("v %.3f %g %.3f\nv %.3f %g %.3f\nv %.3f %g %.3f\nv %.3f %g %.3f\n" % (
                ox + 2, y, oz + 2, ox + 9, y, oz + 2, ox + 9, y, oz + 9, ox + 2, y, oz + 9))
        for k in range(nfloors):
            f.write("f %d %d %d\nf %d %d %d\n" % (
                4 * k + 1, 4 * k + 3, 4 * k + 2, 4 * k + 1, 4 * k + 4, 4 * k + 3))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "ring":
        ring(sys.argv[4], int(sys.argv[2]), int(sys.argv[3]))
    elif len(sys.argv) == 4 and sys.argv[1] == "stack":
        stack(sys.argv[3], int(sys.argv[2]))
    else:
        sys.exit(__doc__)
