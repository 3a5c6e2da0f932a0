"""The standard library a grader can import in the sandbox.

componentize-py's interpreter reads standard modules from files at build time only; at run time
the sandbox has no files, so a module is importable there only if the build imported it into
the snapshot. These are the pure-Python and built-in modules grading code reaches for (text,
numbers, data formats, dates, hashing); modules that need processes, sockets or files are
imported too, so that using them fails as it would on a machine without those, not as a
missing module.
Codecs are looked up by importing `encodings.<name>` on first use, so the common ones are here.
"""

import importlib
import importlib.util
import warnings

MODULES = """
abc argparse array ast asyncio base64 binascii bisect calendar cmath codecs collections
collections.abc colorsys contextlib contextvars copy csv dataclasses datetime decimal difflib
dis email email.message email.utils enum errno fnmatch fractions functools gettext glob graphlib
gzip hashlib heapq hmac html html.entities html.parser http http.client http.cookiejar http.cookies
importlib.metadata importlib.readers importlib.resources importlib.resources._adapters
importlib.resources._common importlib.resources._itertools importlib.resources.abc
importlib.resources.readers io ipaddress itertools
json keyword linecache locale logging math mimetypes numbers operator os pathlib pickle
platform pprint queue quopri random re reprlib secrets select shlex shutil signal socket ssl
statistics string stringprep struct subprocess sys tempfile textwrap threading time timeit
token tokenize traceback types typing unicodedata urllib urllib.error urllib.parse
urllib.request uuid warnings weakref xml xml.dom xml.dom.minidom xml.etree.ElementTree zlib
encodings.ascii encodings.latin_1 encodings.utf_8_sig encodings.utf_16 encodings.utf_16_le
encodings.utf_16_be encodings.utf_32 encodings.utf_32_le encodings.utf_32_be encodings.cp1252
encodings.cp437 encodings.iso8859_1 encodings.iso8859_15 encodings.mac_roman encodings.charmap
encodings.idna encodings.punycode encodings.unicode_escape encodings.raw_unicode_escape
encodings.base64_codec encodings.hex_codec encodings.zlib_codec encodings.rot_13
_strptime tomllib configparser getopt optparse pkgutil sched filecmp fileinput plistlib
zoneinfo sre_compile sre_parse sre_constants concurrent.futures concurrent.futures.thread
email.generator email.header email.charset email.mime.text email.mime.multipart
email.mime.base email.mime.application email.mime.nonmultipart
xml.sax xml.sax.saxutils xml.sax.handler xml.dom.expatbuilder
logging.handlers unittest
encodings.utf_7 encodings.cp1250 encodings.cp1251 encodings.cp1253 encodings.cp1254
encodings.cp1255 encodings.cp1256 encodings.cp1257 encodings.cp1258 encodings.cp850
encodings.cp866 encodings.koi8_r encodings.koi8_u encodings.mac_cyrillic encodings.iso8859_2
encodings.iso8859_3 encodings.iso8859_4 encodings.iso8859_5 encodings.iso8859_6
encodings.iso8859_7 encodings.iso8859_8 encodings.iso8859_9 encodings.iso8859_10
encodings.iso8859_11 encodings.iso8859_13 encodings.iso8859_14 encodings.iso8859_16
encodings.shift_jis encodings.cp932 encodings.euc_jp encodings.gbk encodings.gb2312
encodings.gb18030 encodings.big5 encodings.euc_kr encodings.cp949
""".split()

AVAILABLE = []
for _name in MODULES:
    # A deprecated module (`sre_compile`) warns of itself when imported: the user's code,
    # not this preload, is where a warning would be of use.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            importlib.import_module(_name)
        except Exception:  # not built into this interpreter (e.g. a C extension WASI lacks)
            continue
    AVAILABLE.append(_name)

# Standard modules `python3 -m` runs in a process: their spec and code, kept from the build,
# since at run time there is no file to read them from again.
RUNNABLE = {}
for _name in ("json.tool", "base64"):
    _spec = importlib.util.find_spec(_name)
    RUNNABLE[_name] = (_spec, _spec.loader.get_code(_name))
