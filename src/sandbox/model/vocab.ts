/**
 * Word lists the generators draw from. Kept as delimited text so the formatter leaves them compact;
 * `list` splits on `|`.
 */

const list = (text: string): readonly string[] => text.split('|');

export const FIRST_NAMES = list(
  'Ava|Liam|Noah|Emma|Olivia|Mia|Lucas|Sofia|Amir|Fatima|Yuki|Chen|Mateo|Chloe|Ethan|Hannah|Leon|Marie|' +
    'Jonas|Lea|Omar|Layla|Priya|Arjun|Grace|Jack|Isla|Oscar|Freya|Hugo|Elif|Mehmet|Zara|Felix|Nora|Sam',
);
export const LAST_NAMES = list(
  "Smith|Johnson|Garcia|Müller|Schmidt|Martin|Bernard|Dubois|Rossi|Jansen|de Vries|O'Brien|Murphy|" +
    'Al-Sabah|Al-Mutairi|Tanaka|Wang|Kim|Nguyen|Patel|Brown|Taylor|Wilson|Evans|Walker|Moreau|Fischer|Weber',
);
export const STREETS = list(
  'Main St|Oak Avenue|High Street|Station Road|Hauptstraße|Rue de la Paix|Keizersgracht|Gulf Road|' +
    'Maple Drive|Church Lane|Elm Street|Market Street|Victoria Road|Baker Street',
);

export interface Region {
  city: string;
  state: string;
  country: string;
  /** Shape of a postcode: 9 becomes a random digit, A a random capital letter. */
  postcode: string;
  phonePrefix: string;
  latitude: number;
  longitude: number;
  currency: string;
  language: string;
  taxId: number;
  taxTitle: string;
  taxRate: number;
  /** Relative share of customers living here. */
  weight: number;
}

// city | state | country | postcode | phone | lat | lon | currency | language | tax id | tax title | rate | weight
const REGION_ROWS = [
  'New York|NY|US|99999|+1|40.7128|-74.006|USD|en-us|101|NY Sales Tax|0.08875|14',
  'Los Angeles|CA|US|99999|+1|34.0522|-118.2437|USD|en-us|102|CA Sales Tax|0.095|12',
  'Austin|TX|US|99999|+1|30.2672|-97.7431|USD|en-us|103|TX Sales Tax|0.0825|8',
  'Seattle|WA|US|99999|+1|47.6062|-122.3321|USD|en-us|104|WA Sales Tax|0.101|6',
  'Chicago|IL|US|99999|+1|41.8781|-87.6298|USD|en-us|105|IL Sales Tax|0.1025|7',
  'Portland|OR|US|99999|+1|45.5152|-122.6784|USD|en-us|106|OR Sales Tax|0|3',
  'Miami|FL|US|99999|+1|25.7617|-80.1918|USD|en-us|107|FL Sales Tax|0.07|5',
  'London|Greater London|GB|AA9 9AA|+44|51.5074|-0.1278|GBP|en-gb|201|UK VAT|0.2|9',
  'Manchester|Greater Manchester|GB|A9 9AA|+44|53.4808|-2.2426|GBP|en-gb|201|UK VAT|0.2|5',
  'Berlin|Berlin|DE|99999|+49|52.52|13.405|EUR|de|301|MwSt|0.19|6',
  'Paris|Île-de-France|FR|75099|+33|48.8566|2.3522|EUR|fr|302|TVA|0.2|5',
  'Amsterdam|Noord-Holland|NL|9999 AA|+31|52.3676|4.9041|EUR|nl|303|BTW|0.21|4',
  'Zürich|ZH|CH|8099|+41|47.3769|8.5417|EUR|de-ch|304|MWST|0.081|3',
  'Kuwait City|Al Asimah|KW|99999|+965|29.3759|47.9774|KWD|ar|401|No VAT|0|3',
  'Hawalli|Hawalli|KW|99999|+965|29.3328|48.0286|KWD|ar|401|No VAT|0|2',
  'Sydney|NSW|AU|2999|+61|-33.8688|151.2093|USD|en-au|501|GST|0.1|3',
];

export const REGIONS: readonly Region[] = REGION_ROWS.map((row) => {
  const [
    city,
    state,
    country,
    postcode,
    phonePrefix,
    lat,
    lon,
    currency,
    language,
    taxId,
    taxTitle,
    rate,
    weight,
  ] = row.split('|') as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    city,
    state,
    country,
    postcode,
    phonePrefix,
    latitude: Number(lat),
    longitude: Number(lon),
    currency,
    language,
    taxId: Number(taxId),
    taxTitle,
    taxRate: Number(rate),
    weight: Number(weight),
  };
});

export const CATEGORY_NAMES = list(
  'Coffee|Tea|Skincare|Supplements|Pet Food|Snacks|Apparel|Accessories|Home|Fitness|Books|Gift Cards',
);
export const GIFT_CARD_CATEGORY = 'Gift Cards';

export const PRODUCT_NOUNS: Record<string, readonly string[]> = {
  Coffee: list('Espresso Blend|House Roast|Cold Brew Pack|Ethiopia Yirgacheffe|Decaf Colombia'),
  Tea: list('Earl Grey|Sencha|Chai Blend|Rooibos|Ceremonial Matcha'),
  Skincare: list('Night Cream|Vitamin C Serum|Cleansing Balm|SPF 50 Fluid|Lip Repair'),
  Supplements: list('Omega-3 Capsules|Magnesium Glycinate|Vitamin D3|Whey Protein|Collagen Powder'),
  'Pet Food': list('Grain-Free Kibble|Salmon Treats|Senior Dog Mix|Kitten Pâté|Dental Chews'),
  Snacks: list('Protein Bar Box|Trail Mix|Dark Chocolate Bites|Rice Crackers|Dried Mango'),
  Apparel: list('Merino Socks|Organic Tee|Running Shorts|Wool Beanie|Boxer Briefs'),
  Accessories: list('Razor Blades|Toothbrush Heads|Water Filter|Coffee Filters|Tote Bag'),
  Home: list('Laundry Sheets|Dish Soap Refill|Hand Soap|Candle|Compostable Bags'),
  Fitness: list('Resistance Bands|Electrolyte Mix|Yoga Mat Spray|Pre-Workout|Shaker Bottle'),
  Books: list('Monthly Novel|Cookbook Club|Kids Story Box|Poetry Pamphlet|Travel Guide'),
  'Gift Cards': list('Gift Card|E-Gift Card'),
};
export const PRODUCT_ADJECTIVES = list(
  'Classic|Organic|Premium|Everyday|Signature|Wild|Nordic|Golden|Essential|Pure',
);

/** Variant attribute families: code, display name, values. */
export const VARIANT_ATTRIBUTES = [
  { code: 'size', name: 'Size', values: list('S|M|L|XL') },
  { code: 'weight', name: 'Weight', values: list('250g|500g|1kg') },
  { code: 'flavor', name: 'Flavor', values: list('Original|Vanilla|Chocolate|Berry') },
  { code: 'color', name: 'Color', values: list('Black|Navy|Sand|Olive') },
  { code: 'pack', name: 'Pack', values: list('Single|3-pack|6-pack') },
] as const;

/** Hidden product groupings behind the products `range` filter (see docs/sandbox-data.md). */
export const RANGES = list('bestsellers|new-arrivals|subscribe-and-save|holiday|clearance|staff-picks').map(
  (slug, i) => ({ id: i + 1, slug }),
);

export const CANCEL_REASONS = list(
  'too_expensive|not_using_enough|switching_product|delivery_issues|payment_failed|moving_abroad|other',
);
export const CANCEL_OTHER_MESSAGES = list(
  'Taking a break for the summer|Found a local shop|Too much packaging|Budget is tight this year',
);

export const UTM_SOURCES = list('google|facebook|instagram|tiktok|newsletter|youtube|bing');
export const UTM_MEDIUMS = list('cpc|social|email|video|organic|referral');
export const UTM_CAMPAIGNS = list('spring_sale|black_friday|summer_launch|retargeting|brand|welcome');
export const UTM_TERMS = list('subscription box|organic coffee|gift ideas|free shipping|best tea');
export const UTM_CONTENTS = list('banner_a|banner_b|video_15s|carousel|text_link');
export const AFFILIATES = list('influencer_anna|coupon_site|podcast_daily|blog_green|partner_shop');
export const SUBAFFILIATES = list('ig|yt|story|bio|q1|q2|promo|email');
export const FUNNELS = list('main|quiz|upsell-flow|black-friday|gift-funnel|trial');

export const SUPPORT_SUBJECTS = list(
  'Where is my order?|Change my subscription date|Damaged item received|Refund request|' +
    'Update payment method|Cancel my subscription|Wrong flavor shipped|Invoice needed',
);

export const USER_AGENTS = [
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 Version/17.4 Safari/605.1.15',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/124.0 Mobile Safari/537.36',
] as const;

/** Where the seeded store's storefront lives (product, order status and checkout URLs). */
export const STORE_ORIGIN = 'https://demo-store.example';
export const CDN_ORIGIN = 'https://cdn.demo-store.example';
