"""The baseline of the write benchmark: what users write today to turn an
image folder into WebDataset shards. A multiprocessing.Pool of WORKERS
processes opens each photo with PIL, converts it to RGB, resizes it to a
short side of 256 (bilinear) and saves it as JPEG at quality 90; the main
process writes the results, in order, with tarfile (KEY.jpg, KEY.cls).

    /usr/bin/python3 pil_pool.py TRAIN_DIR OUT.tar WORKERS
"""
import io
import os
import sys
import tarfile
from multiprocessing import Pool

from PIL import Image

SHORT, QUALITY = 256, 90


def convert(path):
    im = Image.open(path).convert("RGB")
    w, h = im.size
    s = SHORT / min(w, h)
    im = im.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BILINEAR)
    out = io.BytesIO()
    im.save(out, format="JPEG", quality=QUALITY)
    return out.getvalue()


def main():
    root, out, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
    classes = sorted(os.listdir(root))
    files = [(os.path.join(root, c, f), label) for label, c in enumerate(classes)
             for f in sorted(os.listdir(os.path.join(root, c)))]
    with Pool(workers) as pool, tarfile.open(out, "w") as tar:
        for k, data in enumerate(pool.imap(convert, [f for f, _ in files])):
            for name, payload in (("%09d.jpg" % k, data), ("%09d.cls" % k, str(files[k][1]).encode())):
                info = tarfile.TarInfo(name)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))


if __name__ == "__main__":
    main()
