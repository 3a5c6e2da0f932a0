"""The same `anthropic` and `openai` calls, made with the real packages (anthropic 2.14.0, openai
3.57.0, under CPython) and with gavel's stand-ins (under CPython, over `gavel_runtime.http`),
must send the same requests and read back the same values, case by case (clients.py).
`PEER_PYTHON` is the interpreter that has the real packages (run.sh makes it)."""

import unittest

from test_differential import both_sides


class Clients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.real, cls.gavel = both_sides("clients.py")

    def test_same_cases(self):
        self.assertEqual(sorted(self.real), sorted(self.gavel))
        for prefix, least in (("anthropic/", 25), ("openai/", 25)):
            self.assertGreaterEqual(sum(1 for k in self.real if k.startswith(prefix)), least, prefix)

    def test_every_case_matches(self):
        for key in sorted(self.real):
            with self.subTest(case=key):
                self.assertEqual(self.real[key], self.gavel[key])

    def test_cases_exercise_what_they_name(self):
        # A case that silently sent nothing, or read nothing back, would match trivially.
        seen = self.real
        self.assertEqual(seen["anthropic/create"]["value"]["text"], "PASS: the answer names the capital.")
        self.assertEqual(seen["anthropic/count-tokens-env"]["value"]["input_tokens"], 21)
        self.assertEqual(seen["openai/chat"]["value"]["content"], '{"score": 1, "reason": "correct"}')
        self.assertEqual(seen["openai/responses"]["value"]["output_text"], "Score: 7/10")
        self.assertEqual(seen["openai/embeddings-base64"]["value"]["embedding"], [0.5, -1.0, 0.25])
        self.assertEqual(len(seen["anthropic/retried-429"]["requests"]), 3)
        self.assertEqual(seen["anthropic/retried-429"]["error"]["type"], "RateLimitError")
        self.assertEqual(len(seen["anthropic/told-not-to-retry"]["requests"]), 1)
        self.assertEqual(seen["anthropic/connection-refused"]["error"]["type"], "APIConnectionError")
        self.assertEqual(seen["openai/status-404"]["error"]["type"], "NotFoundError")
        self.assertEqual(seen["openai/timeout"]["error"]["type"], "APITimeoutError")
        self.assertTrue(seen["openai/timeout"]["error"]["is APIConnectionError"])
        headers = seen["anthropic/create"]["requests"][0]["headers"]
        self.assertEqual(headers["authorization"], "Bearer sk-ant")
        self.assertIn("anthropic-version", headers)


if __name__ == "__main__":
    unittest.main()
