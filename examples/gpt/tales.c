/* "tales": the default language-modelling corpus, generated here, byte for byte the same on
 * every machine. Short children's stories from a small grammar: two characters, a place,
 * objects counted in digits, and sentences that must agree with what came before (a name's
 * pronoun, singular and plural, the counts after a gift). A byte-level model learns it at
 * several levels at once: spelling, grammar, copying names from earlier in the context, and
 * small subtractions. Only integer arithmetic and fixed tables are used, so the bytes do not
 * depend on the compiler, the libc or the CPU; tales_generate checks them against
 * TALES_FNV1A64. */
#include <stdio.h>
#include <string.h>

#include "gpt.h"

/* the generator's own splitmix64 stream, independent of the trainer's */
static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* an index in 0..n-1, skewed towards the start of the table (the product of two uniform
 * draws), so some words are frequent and others rare, as in real text */
static int pick(uint64_t *s, int n) {
    uint64_t a = next(s) & 1023u, b = next(s) & 1023u;
    return (int)(((uint64_t)n * (a * 1024u + b) * ((next(s) & 1023u) + 1u)) >> 30) % n;
}

/* a uniform index in 0..n-1 */
static int uniform(uint64_t *s, int n) { return (int)(next(s) % (uint64_t)n); }

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const struct {
    const char *name;
    int she;
} names[] = {
    {"Mia", 1},  {"Tom", 0},  {"Lily", 1}, {"Ben", 0},  {"Anna", 1}, {"Max", 0},
    {"Sara", 1}, {"Leo", 0},  {"Ella", 1}, {"Sam", 0},  {"Zoe", 1},  {"Jack", 0},
    {"Nora", 1}, {"Finn", 0}, {"Ruby", 1}, {"Owen", 0}, {"Ivy", 1},  {"Hugo", 0},
    {"Maya", 1}, {"Theo", 0}, {"Rosa", 1}, {"Eli", 0},  {"Lucy", 1}, {"Noah", 0},
};
static const char *animals[] = {"cat",   "dog",   "fox",   "bird",   "bear", "frog",
                                "duck",  "mouse", "owl",   "rabbit", "goat", "horse",
                                "tiger", "sheep", "snail", "whale"};
static const char *adjectives[] = {"little", "big",   "brave",  "shy",    "happy", "sleepy",
                                   "clever", "old",   "young",  "kind",   "quiet", "funny",
                                   "busy",   "proud", "gentle", "curious"};
static const char *colours[] = {"red",   "blue",  "green", "yellow", "brown",
                                "white", "black", "pink",  "orange", "purple"};
/* singular and plural */
static const char *objects[][2] = {
    {"ball", "balls"},     {"apple", "apples"}, {"book", "books"},   {"box", "boxes"},
    {"kite", "kites"},     {"hat", "hats"},     {"cake", "cakes"},   {"cup", "cups"},
    {"flower", "flowers"}, {"shell", "shells"}, {"stone", "stones"}, {"leaf", "leaves"},
    {"key", "keys"},       {"drum", "drums"},   {"boat", "boats"},   {"cherry", "cherries"},
};
static const char *places[] = {"the forest", "the park",   "the village", "the garden",
                               "the river",  "the hill",   "the farm",    "the beach",
                               "the school", "the market", "the lake",    "the castle"};
/* infinitive and past tense */
static const char *verbs[][2] = {
    {"play", "played"},  {"sing", "sang"},     {"read", "read"},     {"swim", "swam"},
    {"dance", "danced"}, {"run", "ran"},       {"paint", "painted"}, {"jump", "jumped"},
    {"cook", "cooked"},  {"climb", "climbed"}, {"draw", "drew"},     {"hide", "hid"},
};
static const char *feelings[] = {"happy", "glad", "sad", "tired", "surprised", "excited"};

typedef struct story_buf {
    char *p;
    size_t n, cap;
} story_buf;

static void put(story_buf *b, const char *s) {
    while (*s && b->n < b->cap) b->p[b->n++] = *s++;
}

static void put_int(story_buf *b, int v) {
    char s[16];
    snprintf(s, sizeof s, "%d", v);
    put(b, s);
}

/* the first letter upper case: sentence starts */
static void put_cap(story_buf *b, const char *s) {
    if (*s && b->n < b->cap) {
        char c = *s++;
        b->p[b->n++] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    put(b, s);
}

/* "a " or "an ", then the word */
static void put_a(story_buf *b, const char *word) {
    put(b, strchr("aeiou", word[0]) ? "an " : "a ");
    put(b, word);
}

static void put_count(story_buf *b, int n, int obj) {
    put_int(b, n);
    put(b, " ");
    put(b, objects[obj][n == 1 ? 0 : 1]);
}

/* One story about characters a and b. */
static void story(story_buf *b, uint64_t *s) {
    int a = pick(s, COUNT(names)), c = pick(s, COUNT(names));
    if (c == a) c = (a + 1 + uniform(s, COUNT(names) - 1)) % COUNT(names);
    const char *A = names[a].name, *B = names[c].name;
    const char *heA = names[a].she ? "she" : "he", *hisA = names[a].she ? "her" : "his";
    const char *himA = names[a].she ? "her" : "him";
    const char *heB = names[c].she ? "she" : "he", *hisB = names[c].she ? "her" : "his";
    int place = pick(s, COUNT(places));
    int obj = pick(s, COUNT(objects)), colour = pick(s, COUNT(colours));
    int have_a = 0, have_b = 0; /* objects counted so far: later sentences must agree */

    put(b, "Once upon a time, there was ");
    put_a(b, adjectives[pick(s, COUNT(adjectives))]);
    put(b, " ");
    put(b, animals[pick(s, COUNT(animals))]);
    put(b, " named ");
    put(b, A);
    put(b, ". ");
    put_cap(b, heA);
    put(b, " lived near ");
    put(b, places[place]);
    put(b, " with ");
    put(b, hisA);
    put(b, " friend ");
    put(b, B);
    put(b, ", ");
    put_a(b, adjectives[pick(s, COUNT(adjectives))]);
    put(b, " ");
    put(b, animals[pick(s, COUNT(animals))]);
    put(b, ".\n");

    int sentences = 3 + uniform(s, 5);
    for (int i = 0; i < sentences; i++) {
        int v = pick(s, COUNT(verbs));
        switch (uniform(s, 7)) {
        case 0: /* habits */
            put(b, "Every day, ");
            put(b, A);
            put(b, " and ");
            put(b, B);
            put(b, " liked to ");
            put(b, verbs[v][0]);
            put(b, " together.");
            break;
        case 1: /* finding things: a count that later sentences use */
            have_a = 1 + uniform(s, 9);
            put(b, "One day, ");
            put(b, A);
            put(b, " found ");
            put_count(b, have_a, obj);
            put(b, " near ");
            put(b, places[pick(s, COUNT(places))]);
            put(b, ".");
            break;
        case 2: /* giving: the counts must add up */
            if (have_a >= 2) {
                int k = 1 + uniform(s, have_a - 1);
                put_cap(b, A);
                put(b, " gave ");
                put_count(b, k, obj);
                put(b, " to ");
                put(b, B);
                put(b, ". Now ");
                put(b, A);
                put(b, " had ");
                put_count(b, have_a - k, obj);
                put(b, " and ");
                put(b, B);
                put(b, " had ");
                have_b += k;
                put_count(b, have_b, obj);
                put(b, ".");
                have_a -= k;
            } else {
                put(b, "The ");
                put(b, objects[obj][0]);
                put(b, " was ");
                put(b, colours[colour]);
                put(b, ".");
            }
            break;
        case 3: /* speech */
            put_cap(b, B);
            put(b, " said, \"I want to ");
            put(b, verbs[v][0]);
            put(b, " at ");
            put(b, places[pick(s, COUNT(places))]);
            put(b, ".\" \"Me too!\" said ");
            put(b, A);
            put(b, ".");
            break;
        case 4: /* past tense and pronouns */
            put(b, "Then ");
            put(b, heA);
            put(b, " ");
            put(b, verbs[v][1]);
            put(b, " with ");
            put(b, B);
            put(b, " until ");
            put(b, heB);
            put(b, " was ");
            put(b, feelings[pick(s, COUNT(feelings))]);
            put(b, ".");
            break;
        case 5: /* possession and colour */
            put_cap(b, hisB);
            put(b, " ");
            put(b, colours[colour]);
            put(b, " ");
            put(b, objects[obj][0]);
            put(b, " made ");
            put(b, A);
            put(b, " smile, so ");
            put(b, B);
            put(b, " gave it to ");
            put(b, himA);
            put(b, ".");
            break;
        default: /* a question about the place */
            put_cap(b, B);
            put(b, " asked, \"Where is ");
            put(b, places[place]);
            put(b, "?\" ");
            put_cap(b, A);
            put(b, " showed ");
            put(b, heB[0] == 's' ? "her" : "him");
            put(b, " the way.");
            break;
        }
        put(b, i + 1 == sentences ? "\n" : " ");
    }
    put(b, "In the end, ");
    put(b, A);
    put(b, " and ");
    put(b, B);
    put(b, " were very ");
    put(b, feelings[pick(s, 2)]);
    put(b, ". The end.\n\n");
}

uint64_t fnv1a64(const unsigned char *p, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

void tales_generate(unsigned char *out, size_t n) {
    uint64_t s = 0x7A1E5C0DE5EED001ull;
    story_buf b = {(char *)out, 0, n};
    while (b.n < n) story(&b, &s);
}
