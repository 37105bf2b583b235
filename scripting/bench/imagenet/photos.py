"""Collects the photo set of the ImageNet benchmark (run.sh): real photos from
Debian's python3-skimage and python3-sklearn, and large JPEGs made from them.

    /usr/bin/python3 photos.py PKG_ROOT OUT

PKG_ROOT: where python3-skimage and python3-sklearn were unpacked (dpkg-deb -x).
Writes OUT/SET/train/classN/*.jpg for SET in small (< 0.5 MP), medium
(0.5-3 MP), large (3-10 MP), huge (> 10 MP), and mix (each set's photos once),
and prints one line per photo to OUT/photos.txt: set, file, size, MP,
quality, sampling, baseline or progressive.

- small: the photos as shipped (JPEGs) or encoded once as JPEG (PNGs, quality
  90), colour and gray, plus a few encoded progressive;
- medium, large, huge: the colour photos upscaled with PIL (LANCZOS) to 0.8-16
  MP and saved at qualities 75, 90 and 95, with 4:2:0, 4:2:2 and 4:4:4
  chroma, a third of them progressive. Upscaled photos hold less fine detail
  than photos taken at that size, so their files are smaller and their
  entropy decoding cheaper than a camera's: the decode costs that grow with
  pixels (IDCT, upsampling, colour) are real, the Huffman share is lower.
"""
import os
import sys

from PIL import Image

SETS = {  # name: (sizes, copies of each photo in the set's own runs)
    "medium": ([(1024, 768), (1600, 1067), (2048, 1365), (1200, 1200)], 4),
    "large": ([(2592, 1728), (3264, 2176), (3000, 3000), (2400, 1800)], 2),
    "huge": ([(4000, 3000), (4608, 3456), (5184, 3456)], 1),
}
COLOUR = ["skimage/data/astronaut.png", "skimage/data/chelsea.png", "skimage/data/coffee.png",
          "skimage/data/motorcycle_left.png", "skimage/data/ihc.png", "skimage/data/rocket.jpg",
          "skimage/data/hubble_deep_field.jpg", "skimage/data/retina.jpg", "sklearn/datasets/images/china.jpg",
          "sklearn/datasets/images/flower.jpg"]
GRAY = ["skimage/data/camera.png", "skimage/data/coins.png", "skimage/data/brick.png", "skimage/data/gravel.png",
        "skimage/data/grass.png", "skimage/data/moon.png"]
SAMPLINGS = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}


def main():
    pkg, out = sys.argv[1] + "/usr/lib/python3/dist-packages/", sys.argv[2]
    photos = {"small": [], "medium": [], "large": [], "huge": []}  # (name, image, save kwargs)
    for k, path in enumerate(COLOUR + GRAY):
        im = Image.open(pkg + path)
        im = im.convert("L" if path in GRAY else "RGB")
        name = os.path.splitext(os.path.basename(path))[0]
        mp = im.size[0] * im.size[1] / 1e6
        target = "small" if mp < 0.5 else "medium"
        if path.endswith(".jpg"):
            photos[target].append((name, pkg + path, None))
        else:
            photos[target].append((name, im, dict(quality=90, progressive=k % 4 == 3)))
    for k, path in enumerate(COLOUR):
        src = Image.open(pkg + path).convert("RGB")
        for set_name, (sizes, _) in SETS.items():
            size = sizes[k % len(sizes)]
            if src.size[0] < src.size[1]:
                size = size[::-1]
            kwargs = dict(quality=(75, 90, 95)[k % 3], subsampling=(2, 1, 0, 2)[k % 4], progressive=k % 3 == 1)
            photos[set_name].append(("%s_%dx%d" % (os.path.basename(path).split(".")[0], *size),
                                     src.resize(size, Image.LANCZOS), kwargs))
    copies = {"small": 8, **{name: c for name, (_, c) in SETS.items()}}
    lines = []
    for set_name, items in photos.items():
        for k, (name, im, kwargs) in enumerate(items):
            for target, n in ((set_name, copies[set_name]), ("mix", 1)):
                for c in range(n):
                    d = "%s/%s/train/class%d" % (out, target, (k + c) % 10)
                    os.makedirs(d, exist_ok=True)
                    f = "%s/%d_%s.jpg" % (d, c, name)
                    if kwargs is None:
                        with open(im, "rb") as a, open(f, "wb") as b:
                            b.write(a.read())
                    else:
                        im.save(f, **kwargs)
            check = Image.open(f)
            lines.append("%s %s %dx%d %.2f MP q%s %s %s" % (
                set_name, name, check.size[0], check.size[1], check.size[0] * check.size[1] / 1e6,
                kwargs["quality"] if kwargs else "(as shipped)", check.mode if check.mode == "L" else
                SAMPLINGS.get(__import__("PIL.JpegImagePlugin").JpegImagePlugin.get_sampling(check), "?"),
                "progressive" if check.info.get("progressive") else "baseline"))
    with open(out + "/photos.txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("bench: %d photos: %s" % (len(lines), ", ".join(
        "%s %d" % (s, len(items)) for s, items in photos.items())), file=sys.stderr)


if __name__ == "__main__":
    main()
